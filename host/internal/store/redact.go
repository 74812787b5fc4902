package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"regexp/syntax"
	"sync"
)

// Redacted replaces every secret the Redactor finds.
const Redacted = "[REDACTED]"

// Redactor removes secrets (API keys, auth headers, bearer tokens, and
// whatever extra patterns the user configures) from bytes before they are
// stored, and, applied identically, from requests before their canonical
// hash is computed, so a live request matches its recording.
//
// It works on encoded bytes rather than on Go values so that every record
// kind, and every field of it, passes through the same filter. The
// built-in patterns only ever match inside a JSON string, so redacted JSON
// stays valid; a user pattern that breaks a stored value's JSON is
// reported as an error rather than stored.
//
// A Redactor is safe for concurrent use.
type Redactor struct {
	rules    []rule
	hints    *hintSet
	patterns []string // user patterns, for Patterns
}

type rule struct {
	name  string
	re    *regexp.Regexp
	repl  []byte   // template for ReplaceAll; nil means use group
	group int      // user rules: index of the "secret" group, or 0 for the whole match
	hints [][]byte // lower-case substrings one of which must occur; none means always run
	user  bool
}

// secretKeys are header and field names whose values are always secret.
const secretKeys = `(?:proxy-)?authorization|x-api-key|x-goog-api-key|api[-_]?key|client[-_]?secret|secret[-_]?key|secret|password|passwd|` +
	`access[-_]?token|refresh[-_]?token|id[-_]?token|session[-_]?token|auth[-_]?token|cookie|set-cookie`

// secretName matches a field or parameter name that holds a secret: one
// that ends in one of these words, with any prefix (db_password,
// aws_secret_access_key, X-Auth-Token, clientSecret). Names that only
// contain such a word (max_tokens, token_count, author, passwordless)
// do not match, because the name must end where the separator begins.
const secretName = `[A-Za-z0-9_.-]*?(?:password|passwd|passphrase|pwd|secret|token|api[-_]?key|apikey|access[-_]?key|private[-_]?key|auth|authorization|bearer|credentials?|cookie)`

// builtinRules are always on; configuration can add rules, never remove these.
var builtinRules = []struct {
	name, re, repl string
	hints          []string
}{{
	// "Authorization": "…" and {"x-api-key":"…"}, also inside a JSON
	// document that is itself a JSON string (\"…\").
	name:  "secret field",
	re:    `(?i)(\\?"(?:` + secretKeys + `)\\?"\s*:\s*\\?")[^"\\]*`,
	repl:  `${1}` + Redacted,
	hints: []string{"authoriz", "api-key", "api_key", "apikey", "secret", "passw", `token"`, `token\`, "cookie"},
}, {
	// Header lines in text: "Authorization: Bearer …", "x-api-key: …".
	name:  "secret header",
	re:    `(?i)\b((?:proxy-)?authorization|x-api-key|x-goog-api-key|api-key)(\s*:\s*)[^\r\n"\\]+`,
	repl:  `${1}${2}` + Redacted,
	hints: []string{"authoriz", "api-key"},
}, {
	name:  "secret query parameter",
	re:    `(?i)([?&](?:api[-_]?key|key|access[-_]?token|token|sig|signature)=)[^&#\s"\\]+`,
	repl:  `${1}` + Redacted,
	hints: []string{"key=", "token=", "sig=", "signature="},
}, {
	// A JSON field whose name says secret, at any depth, also inside a
	// JSON document that is itself a JSON string: {"db_password":"…"}.
	name:  "secret-named field",
	re:    `(?i)(\\?")(` + secretName + `)(\\?"\s*:\s*\\?")[^"\\]+`,
	repl:  `${1}${2}${3}` + Redacted,
	hints: secretEndings(`"`, `\`),
}, {
	// The same with a number: {"pin_password": 1234} becomes a string,
	// so the JSON stays valid.
	name:  "secret-named number",
	re:    `(?i)(\\?")(` + secretName + `)(\\?")(\s*:\s*)-?[0-9][0-9.eE+-]*`,
	repl:  `${1}${2}${3}${4}${3}` + Redacted + `${3}`,
	hints: secretEndings(`"`, `\`),
}, {
	// Text assignments inside strings: password=…, aws_secret_access_key
	// = "…" (TOML), password: … (YAML, headers), ?token=… (URLs),
	// X-Auth-Token: Bearer …. The value ends at white space, a quote, a
	// backslash (an escape in JSON) or &; a scheme word is kept.
	name:  "secret assignment",
	re:    `(?i)(^|[^A-Za-z0-9_.-])(` + secretName + `)(\s*[:=]\s*(?:\\"|')?(?:(?:bearer|basic|token|digest)\s+)?)[^\s"'\\&<>]+`,
	repl:  `${1}${2}${3}` + Redacted,
	hints: secretEndings(":", "=", " ", "\t", "\n", "\r", "\f", "\v"),
}, {
	name:  "bearer token",
	re:    `(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{16,}`,
	repl:  `${1} ` + Redacted,
	hints: []string{"bearer"},
}, {
	// OpenAI (sk-, sk-proj-) and Anthropic (sk-ant-) keys.
	name:  "sk- key",
	re:    `\bsk-[A-Za-z0-9_-]{16,}`,
	repl:  Redacted,
	hints: []string{"sk-"},
}, {
	name:  "aws access key",
	re:    `\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`,
	repl:  Redacted,
	hints: []string{"akia", "asia"},
}, {
	name:  "github token",
	re:    `\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})`,
	repl:  Redacted,
	hints: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"},
}, {
	name:  "slack token",
	re:    `\bxox[abposr]-[A-Za-z0-9-]{10,}`,
	repl:  Redacted,
	hints: []string{"xox"},
}, {
	name:  "google api key",
	re:    `\bAIza[0-9A-Za-z_-]{35}`,
	repl:  Redacted,
	hints: []string{"aiza"},
}, {
	name:  "private key",
	re:    `-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----`,
	repl:  Redacted,
	hints: []string{"private key-----"},
}}

// secretNameEndings are the lower-case words one of which ends every
// name secretName matches.
var secretNameEndings = []string{"password", "passwd", "passphrase", "pwd", "secret", "token", "key", "auth",
	"authorization", "bearer", "credential", "credentials", "cookie"}

// secretEndings returns the hints of a rule whose match holds a secret
// name followed by one of the given bytes: each ending followed by each
// byte. A bare word would do, but "token" alone is in every LLM span
// (gen_ai.usage.input_tokens) and sent each through three expensive
// expressions for nothing.
func secretEndings(next ...string) []string {
	out := make([]string, 0, len(secretNameEndings)*len(next))
	for _, e := range secretNameEndings {
		for _, n := range next {
			out = append(out, e+n)
		}
	}
	return out
}

var (
	defaultRedactor     *Redactor
	defaultRedactorOnce sync.Once
)

// DefaultRedactor returns a Redactor with the built-in patterns only.
func DefaultRedactor() *Redactor {
	defaultRedactorOnce.Do(func() {
		r, err := NewRedactor()
		if err != nil {
			panic("store: built-in redaction patterns: " + err.Error()) // a bug in this file, found by any test
		}
		defaultRedactor = r
	})
	return defaultRedactor
}

// NewRedactor returns a Redactor with the built-in patterns (auth and
// API-key headers and fields, bearer tokens, sk-… style keys and other
// well-known key formats) plus the given regular expressions (RE2
// syntax). A match of a user pattern is replaced by [REDACTED]; if the
// pattern has a group named "secret", only that group is replaced, so
// `token=(?P<secret>\w+)` keeps the "token=" part.
func NewRedactor(patterns ...string) (*Redactor, error) {
	r := &Redactor{patterns: append([]string(nil), patterns...)}
	for _, b := range builtinRules {
		ru := rule{name: b.name, re: regexp.MustCompile(b.re), repl: []byte(b.repl)}
		for _, h := range b.hints {
			ru.hints = append(ru.hints, []byte(h))
		}
		r.rules = append(r.rules, ru)
	}
	for _, p := range patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("redaction pattern %q: %w", p, err)
		}
		if re.MatchString("") {
			return nil, fmt.Errorf("redaction pattern %q matches the empty string", p)
		}
		ru := rule{name: p, re: re, user: true}
		if g := re.SubexpIndex("secret"); g > 0 {
			ru.group = g
		}
		// A literal prefix is a cheap pre-check, unless the pattern is
		// case-insensitive (then the prefix is reported empty anyway).
		if prefix, _ := re.LiteralPrefix(); prefix != "" && !foldsCase(p) {
			ru.hints = [][]byte{bytes.ToLower([]byte(prefix))}
		}
		r.rules = append(r.rules, ru)
	}
	hints := make([][][]byte, len(r.rules))
	for i, ru := range r.rules {
		hints[i] = ru.hints
	}
	r.hints = newHintSet(hints)
	return r, nil
}

func foldsCase(p string) bool {
	re, err := syntax.Parse(p, syntax.Perl)
	return err != nil || re.Flags&syntax.FoldCase != 0
}

// Patterns returns the user patterns the Redactor was made with.
func (r *Redactor) Patterns() []string { return append([]string(nil), r.patterns...) }

// Redact returns b with every secret replaced by [REDACTED]. It returns b
// itself when nothing matched.
func (r *Redactor) Redact(b []byte) []byte {
	out, _ := r.redact(b)
	return out
}

// RedactString is Redact for a string.
func (r *Redactor) RedactString(s string) string {
	out, _ := r.redact([]byte(s))
	return string(out)
}

// redact also returns the first user rule that changed something, so a
// caller that needs valid JSON can blame it.
func (r *Redactor) redact(b []byte) ([]byte, *rule) {
	if len(b) == 0 {
		return b, nil
	}
	run := r.hints.scan(b)
	if run == 0 && len(r.rules) <= 64 {
		return b, nil
	}
	var blame *rule
	out := b
	// run was computed before any replacement, but replacements only
	// remove text, so it stays a superset of the rules that can match.
	for i := range r.rules {
		ru := &r.rules[i]
		if (i < 64 && run&(1<<i) == 0) || !ru.re.Match(out) {
			continue
		}
		out = ru.replace(out)
		if ru.user && blame == nil {
			blame = ru
		}
	}
	return out, blame
}

func (ru *rule) replace(b []byte) []byte {
	if !ru.user {
		return ru.re.ReplaceAll(b, ru.repl)
	}
	var out []byte
	last := 0
	for _, m := range ru.re.FindAllSubmatchIndex(b, -1) {
		lo, hi := m[2*ru.group], m[2*ru.group+1]
		if lo < 0 {
			continue
		}
		out = append(out, b[last:lo]...)
		out = append(out, Redacted...)
		last = hi
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

// redactJSON redacts an encoded JSON value and checks that user patterns
// left it valid.
func (r *Redactor) redactJSON(b []byte) ([]byte, error) {
	out, blame := r.redact(b)
	if blame != nil && !json.Valid(out) {
		return nil, fmt.Errorf("redaction pattern %q turned a stored value into invalid JSON; make it match inside strings only", blame.name)
	}
	return out, nil
}

// redactOpaque redacts bytes of unknown format (checkpoint state): if they
// were JSON, user patterns must leave them JSON.
func (r *Redactor) redactOpaque(b []byte) ([]byte, error) {
	out, blame := r.redact(b)
	if blame != nil && json.Valid(b) && !json.Valid(out) {
		return nil, fmt.Errorf("redaction pattern %q turned checkpoint state into invalid JSON; make it match inside strings only", blame.name)
	}
	return out, nil
}
