package store

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// unconfirmed is r with every hint occurrence opening a window.
func unconfirmed(r *Redactor) *Redactor {
	u := *r
	u.rules = slices.Clone(r.rules)
	for i := range u.rules {
		u.rules[i].confirm = nil
	}
	return &u
}

// TestRedactConfirmExact: the checks that keep a hint from opening a
// window change nothing the redactor does: on prose with secrets in all
// their forms, on the adversarial input and on soups of the pieces
// anchors are made of, it gives the same bytes as without them, raw, as
// JSON and as JSON in JSON.
func TestRedactConfirmExact(t *testing.T) {
	r := DefaultRedactor()
	u := unconfirmed(r)
	check := func(t *testing.T, in []byte) {
		t.Helper()
		for _, mode := range []textMode{asText, asJSON} {
			got, _ := r.redact(in, mode)
			want, _ := u.redact(in, mode)
			if string(got) != string(want) {
				t.Fatalf("mode %v: with confirms\n%q\nwithout\n%q\nin\n%q", mode, got, want, in)
			}
		}
	}
	t.Run("forms", func(t *testing.T) {
		check(t, redactInput(64<<10, 0))
		check(t, redactInput(64<<10, 300))
		check(t, adversarialInput(16<<10))
	})
	pieces := []string{"token", "password", "Secret", "api_key", "api-key", "Authorization", "authoriz", "auth", "key", "cookie",
		"Bearer", "bearer", "sk-", "task-", "AKIA", "ghp_", "github_pat_", "xoxb-", "AIza", "://", "?", "&", "=", ":", ":=",
		" ", "  ", "\t", "\n", `\n`, `\t`, `\`, `\\`, `"`, `\"`, `'`, ",", "-", "--", ".", "_", "x", "abc", "0123456789abcdefghij",
		"[", "]", "<", ">", "{", "}", strings.Repeat("a", 70), strings.Repeat(" ", 17)}
	rng := rand.New(rand.NewPCG(26, 11))
	for i := range 3000 {
		var b strings.Builder
		for n := 4 + rng.IntN(40); n > 0; n-- {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		text := b.String()
		check(t, []byte(text))
		js, _ := json.Marshal(map[string]string{"t": text})
		check(t, js)
		if i%10 == 0 {
			nested, _ := json.Marshal(map[string]string{"d": string(js)})
			check(t, nested)
		}
	}
}

// TestRedactConfirmProse: prose full of secret words opens no window
// for the rules whose anchors need a separator, a dash or a quote.
func TestRedactConfirmProse(t *testing.T) {
	r := DefaultRedactor()
	text := []byte(`the auth token expired after the password reset and the api key in the settings page, a secret question, ` +
		`the cookie banner and the task-list`)
	hs := r.hits(text, r.windowed)
	for i := range hs {
		if w := r.rules[i].windowsOf(text, &hs[i]); len(w) > 0 {
			t.Errorf("rule %q has windows %v", r.rules[i].name, w)
		}
	}
	if got := r.Redact(text); string(got) != string(text) {
		t.Errorf("prose redacted: %s", got)
	}
}
