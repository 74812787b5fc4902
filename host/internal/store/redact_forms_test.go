package store

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// secretForm builds one way of writing a secret: the text, the random
// pieces of the secret that must not survive, and whether the form runs
// to the end of its line (a header, a YAML value), so that the text
// after it must begin on the next line.
type secretForm struct {
	name string
	make func(g *secretGen) (text string, pieces []string)
	line bool
}

// secretGen draws secrets from a seeded generator.
type secretGen struct{ rng *rand.Rand }

const (
	alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	upper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
)

// piece is a random run of n to m bytes of alphabet: a part of a secret
// long enough that finding it in the output means the secret leaked.
func (g *secretGen) piece(alphabet string, n, m int) string {
	b := make([]byte, n+g.rng.IntN(m-n+1))
	for i := range b {
		b[i] = alphabet[g.rng.IntN(len(alphabet))]
	}
	return string(b)
}

// secret is pieces joined by separators drawn from seps (none: one piece).
func (g *secretGen) secret(seps string, parts int) (string, []string) {
	var b strings.Builder
	var pieces []string
	for i := range parts {
		if i > 0 && seps != "" {
			b.WriteByte(seps[g.rng.IntN(len(seps))])
		}
		p := g.piece(alnum, 6, 16)
		pieces = append(pieces, p)
		b.WriteString(p)
	}
	return b.String(), pieces
}

// name returns one of names in a random case form.
func (g *secretGen) name(names ...string) string {
	n := names[g.rng.IntN(len(names))]
	switch g.rng.IntN(3) {
	case 0:
		return strings.ToUpper(n)
	case 1:
		return strings.ToUpper(n[:1]) + n[1:]
	}
	return n
}

var (
	// bare values end at white space, quotes, & < >: anything else goes.
	bareSeps   = "!#$%*+-./:=?@^_~,;()[]{}|"
	quotedSeps = " !#$%*+-./:=?@^_~,;()[]{}|&<>"
	fieldNames = []string{"password", "passwd", "secret", "token", "api_key", "apikey", "access_key", "private_key",
		"authorization", "bearer", "db_password", "clientSecret", "accessToken", "x-api-key", "refresh_token", "secret_key"}
)

// formsOfSecrets are the ways of writing a secret the redactor must catch:
// every form of issue 26's list and variations of each.
var formsOfSecrets = []secretForm{
	{name: "single-quoted words", make: func(g *secretGen) (string, []string) {
		s, p := g.secret(quotedSeps, 3)
		return g.name(fieldNames...) + "='" + s + "'", p
	}},
	{name: "double-quoted words", make: func(g *secretGen) (string, []string) {
		s, p := g.secret(quotedSeps+"'", 3)
		return g.name(fieldNames...) + ` = "` + s + `"`, p
	}},
	{name: "double-quoted with escaped quote", make: func(g *secretGen) (string, []string) {
		s, p := g.secret(quotedSeps, 2)
		return g.name(fieldNames...) + `: "ab\"` + s + `"`, p
	}},
	{name: "angle brackets", make: func(g *secretGen) (string, []string) {
		s, p := g.secret(bareSeps+" ", 2)
		s = strings.NewReplacer("<", "", ">", "").Replace(s)
		return g.name(fieldNames...) + "=<" + s + ">", p
	}},
	{name: "yaml next line", line: true, make: func(g *secretGen) (string, []string) {
		s, p := g.secret(quotedSeps, 3)
		return g.name(fieldNames...) + ":\n  " + s, p
	}},
	{name: "yaml next line quoted", line: true, make: func(g *secretGen) (string, []string) {
		s, p := g.secret(quotedSeps, 2)
		return "db:\n  " + g.name(fieldNames...) + ":\n    '" + s + "'", p
	}},
	{name: "url userinfo", make: func(g *secretGen) (string, []string) {
		s, p := g.secret("!$*+-._~=;,", 2)
		scheme := []string{"postgres", "mysql", "redis", "https", "amqp", "mongodb+srv"}[g.rng.IntN(6)]
		return scheme + "://admin:" + s + "@db.internal:5432/app", p
	}},
	{name: "json array", make: func(g *secretGen) (string, []string) {
		s1, p1 := g.secret("", 1)
		s2, p2 := g.secret(quotedSeps, 2)
		return `"` + g.name(fieldNames...) + `":["` + s1 + `", "` + s2 + `"]`, append(p1, p2...)
	}},
	{name: "json escaped quote", make: func(g *secretGen) (string, []string) {
		s1, p1 := g.secret("", 1)
		s2, p2 := g.secret(quotedSeps, 2)
		return `"` + g.name(fieldNames...) + `":"` + s1 + `\"` + s2 + `"`, append(p1, p2...)
	}},
	{name: "k=v", make: func(g *secretGen) (string, []string) {
		s, p := g.secret(bareSeps, 2)
		return g.name(fieldNames...) + "=" + s, p
	}},
	{name: "k: v", line: true, make: func(g *secretGen) (string, []string) {
		s, p := g.secret(bareSeps, 2)
		return g.name(fieldNames...) + ": " + s, p
	}},
	{name: "json field", make: func(g *secretGen) (string, []string) {
		s, p := g.secret(quotedSeps+"'", 3)
		return `"` + g.name(fieldNames...) + `": "` + s + `"`, p
	}},
	{name: "json number", make: func(g *secretGen) (string, []string) {
		n := g.piece("123456789", 8, 12)
		return `{"pin_` + g.name("password", "secret", "token") + `": ` + n + `}`, []string{n}
	}},
	{name: "json nested object", make: func(g *secretGen) (string, []string) {
		s, p := g.secret(quotedSeps, 2)
		return `{"db":{"primary":{"` + g.name(fieldNames...) + `":"` + s + `","port":5432}}}`, p
	}},
	{name: "python dict", make: func(g *secretGen) (string, []string) {
		s, p := g.secret(quotedSeps, 2)
		return `{'` + g.name(fieldNames...) + `': '` + s + `'}`, p
	}},
	{name: "api_key=", make: func(g *secretGen) (string, []string) {
		s, p := g.secret(bareSeps, 1)
		return "api_key=" + s, p
	}},
	{name: "authorization bearer", line: true, make: func(g *secretGen) (string, []string) {
		s, p := g.secret("-._~+/", 2)
		return g.name("authorization", "proxy-authorization") + ": Bearer " + s, p
	}},
	{name: "header", line: true, make: func(g *secretGen) (string, []string) {
		s, p := g.secret(bareSeps, 2)
		return g.name("x-api-key", "x-auth-token", "api-key", "x-goog-api-key", "cookie") + ": " + s, p
	}},
	{name: "query token", make: func(g *secretGen) (string, []string) {
		s, p := g.secret("-._~", 2)
		return "https://api.example.com/v1/items?" + g.name("token", "access_token", "api_key", "key") + "=" + s + "&page=2", p
	}},
	{name: "env", make: func(g *secretGen) (string, []string) {
		s, p := g.secret(bareSeps, 2)
		return g.name("SECRET_KEY", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "DB_PASSWORD", "STRIPE_API_KEY") + "=" + s, p
	}},
	{name: "export quoted", make: func(g *secretGen) (string, []string) {
		s, p := g.secret(quotedSeps, 2)
		return "export " + g.name("SECRET_KEY", "API_TOKEN") + `="` + s + `"`, p
	}},
	{name: "flag", make: func(g *secretGen) (string, []string) {
		s, p := g.secret(bareSeps, 2)
		flag := g.name("--password", "--api-key", "--token", "-secret", "--db-password")
		if g.rng.IntN(2) == 0 {
			return flag + " " + s, p
		}
		return flag + "=" + s, p
	}},
	{name: "flag quoted", make: func(g *secretGen) (string, []string) {
		s, p := g.secret(quotedSeps, 2)
		return g.name("--password", "--token") + " '" + s + "'", p
	}},
	{name: "argv", make: func(g *secretGen) (string, []string) {
		s, p := g.secret(quotedSeps, 2)
		return `["mysql", "--password", "` + s + `", "-h", "db"]`, p
	}},
	{name: "sk- key", make: func(g *secretGen) (string, []string) {
		s := g.piece(alnum+"_-", 24, 48)
		return []string{"sk-", "sk-proj-", "sk-ant-api03-"}[g.rng.IntN(3)] + s, []string{s}
	}},
	{name: "aws access key", make: func(g *secretGen) (string, []string) {
		s := g.piece(upper, 16, 16)
		return "AKIA" + s, []string{s}
	}},
	{name: "github token", make: func(g *secretGen) (string, []string) {
		s := g.piece(alnum, 36, 36)
		return "ghp_" + s, []string{s}
	}},
	{name: "pem private key", make: func(g *secretGen) (string, []string) {
		var p []string
		var b strings.Builder
		kind := []string{"", "RSA ", "EC ", "OPENSSH "}[g.rng.IntN(4)]
		b.WriteString("-----BEGIN " + kind + "PRIVATE KEY-----\n")
		for range 3 {
			s := g.piece(alnum+"+/", 40, 64)
			p = append(p, s)
			b.WriteString(s + "\n")
		}
		b.WriteString("-----END " + kind + "PRIVATE KEY-----")
		return b.String(), p
	}},
}

// words is the text around a secret: nothing in it is a secret's name.
var words = []string{"the", "model", "answered", "quickly", "with", "a", "summary", "of", "report", "42", "ok",
	"value", "step", "route", "alpha", "beta", "user", "bob", "invoice", "#7", "(see", "below)", "done."}

func (g *secretGen) words(n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = words[g.rng.IntN(len(words))]
	}
	return strings.Join(w, " ")
}

// TestRedactSecretForms: every form of secret, with random secrets, in
// random text, raw, in a JSON string (a task input) and in a JSON document
// inside a JSON string, loses every piece of its secret and nothing
// around it; JSON stays valid and a second pass changes nothing.
func TestRedactSecretForms(t *testing.T) {
	r := DefaultRedactor()
	g := &secretGen{rng: rand.New(rand.NewPCG(26, 4))}
	for _, f := range formsOfSecrets {
		t.Run(f.name, func(t *testing.T) {
			for range 150 {
				form, pieces := f.make(g)
				before, after := g.words(1+g.rng.IntN(4)), g.words(1+g.rng.IntN(4))
				sepAfter := []string{" ", "\n", " \n"}[g.rng.IntN(3)]
				if f.line {
					sepAfter = "\n"
				}
				text := before + []string{" ", "\n", "; "}[g.rng.IntN(3)] + form + sepAfter + after
				checkRedacted(t, r, f.name, text, pieces, []string{before, after})
			}
		})
	}
}

// checkRedacted redacts text in the three contexts and checks the result.
func checkRedacted(t *testing.T, r *Redactor, name, text string, pieces, keep []string) {
	t.Helper()
	input, err := json.Marshal(map[string]string{"text": text})
	if err != nil {
		t.Fatal(err)
	}
	nested, err := json.Marshal(map[string]string{"doc": string(input)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ctx    string
		in     []byte
		decode func([]byte) (string, error)
	}{
		{"raw", []byte(text), func(b []byte) (string, error) { return string(b), nil }},
		{"json", input, func(b []byte) (string, error) {
			var v map[string]string
			err := json.Unmarshal(b, &v)
			return v["text"], err
		}},
		{"nested json", nested, func(b []byte) (string, error) {
			var v, w map[string]string
			if err := json.Unmarshal(b, &v); err != nil {
				return "", err
			}
			// The inner document may be no longer JSON only if a
			// redaction crossed its strings; it must still read.
			err := json.Unmarshal([]byte(v["doc"]), &w)
			return w["text"], err
		}},
	} {
		out, err := r.redactJSON(c.in)
		if c.ctx == "raw" {
			out, err = r.Redact(c.in), nil
		}
		if err != nil {
			t.Fatalf("%s %s: %v", name, c.ctx, err)
		}
		got, err := c.decode(out)
		if err != nil {
			t.Fatalf("%s %s: redaction broke the JSON: %v\n in: %s\nout: %s", name, c.ctx, err, c.in, out)
		}
		for _, p := range pieces {
			if strings.Contains(got, p) || strings.Contains(string(out), p) {
				t.Fatalf("%s %s: %q survives\n in: %s\nout: %s", name, c.ctx, p, c.in, out)
			}
		}
		for _, k := range keep {
			if !strings.Contains(got, k) {
				t.Fatalf("%s %s: %q is gone\n in: %s\nout: %s", name, c.ctx, k, c.in, out)
			}
		}
		if again, _ := r.redact(out, asJSON); string(again) != string(out) {
			t.Fatalf("%s %s: not idempotent\n once: %s\ntwice: %s", name, c.ctx, out, again)
		}
	}
}

// TestRedactRegisteredSecret: a registered literal goes wherever it
// stands, in arbitrary text with nothing to say it is secret, raw and in
// each of its encoded forms, and nothing else goes.
func TestRedactRegisteredSecret(t *testing.T) {
	g := &secretGen{rng: rand.New(rand.NewPCG(26, 5))}
	r := DefaultRedactor() // made before the registrations: it sees them anyway
	_ = r.RedactString("warm up")
	for i := range 60 {
		// Secrets with quotes, backslashes, HTML characters and spaces,
		// which take other forms once encoded.
		secret := g.piece(alnum+`"\<>& !%+/=:'`, 12, 40) + fmt.Sprint(i)
		if !RegisterSecret(secret) {
			t.Fatalf("%q not registered", secret)
		}
		noise := func() string { return g.piece(alnum+" .,;:-_\n\t{}[]()", 0, 30) }
		before, after := noise(), noise()
		text := before + secret + after
		checkRedacted(t, r, "registered", text, []string{secret}, []string{before, after})
		// In a URL query, escaped.
		if got := r.RedactString("https://h/cb?state=" + urlQuery(secret) + "&x=1"); strings.Contains(got, urlQuery(secret)) {
			t.Fatalf("query form survives: %s", got)
		}
	}
}

func urlQuery(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if strings.IndexByte(alnum+"-_.~", c) >= 0 {
			b.WriteByte(c)
		} else if c == ' ' {
			b.WriteByte('+')
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// TestRegisterSecretRefuses: values too short, or mere words, are not
// registered, so they never rewrite ordinary text.
func TestRegisterSecretRefuses(t *testing.T) {
	for _, v := range []string{"", "a", "short7!", "placeholder", "NotNeeded", "   abc   ", "[REDACTED]x1234567"} {
		if RegisterSecret(v) {
			t.Errorf("%q registered", v)
		}
	}
	if got := DefaultRedactor().RedactString("a placeholder NotNeeded"); got != "a placeholder NotNeeded" {
		t.Fatalf("got %q", got)
	}
	// A value with surrounding blanks is registered trimmed.
	if !RegisterSecret("  tr1mmed-Secret-value\n") {
		t.Fatal("not registered")
	}
	if got := DefaultRedactor().RedactString("x tr1mmed-Secret-value y"); got != "x [REDACTED] y" {
		t.Fatalf("got %q", got)
	}
}

// TestRedactRegisteredSecretJSON: a registered literal that is also part
// of a number, or that runs across a string's end, stays rather than
// break the document; inside a string it goes, whole escape sequences
// and all.
func TestRedactRegisteredSecretJSON(t *testing.T) {
	if !RegisterSecret("86753091234") || !RegisterSecret(`q","z":"Qx9`) || !RegisterSecret("nW3bz-secret") {
		t.Fatal("not registered")
	}
	r := DefaultRedactor()
	tests := []struct{ name, in, want string }{
		{"in a number", `{"n":1867530912345,"s":"id 86753091234"}`, `{"n":1867530912345,"s":"id [REDACTED]"}`},
		{"across strings", `{"a":"q","z":"Qx9"}`, `{"a":"q","z":"Qx9"}`},
		{"escaped inside a string", `{"a":"q\",\"z\":\"Qx9"}`, `{"a":"[REDACTED]"}`},
		{"after an escape", `{"a":"\nW3bz-secret"}`, `{"a":"\nW3bz-secret"}`},
		{"after an escaped backslash", `{"a":"\\nW3bz-secret"}`, `{"a":"\\[REDACTED]"}`},
		{"in a key", `{"nW3bz-secret":1}`, `{"[REDACTED]":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.redactJSON([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("\n got: %s\nwant: %s", got, tt.want)
			}
			if !json.Valid(got) {
				t.Fatalf("invalid JSON: %s", got)
			}
		})
	}
	// As text, every occurrence goes.
	if got := r.RedactString(`{"n":1867530912345}`); got != `{"n":1[REDACTED]5}` {
		t.Fatalf("text: %s", got)
	}
}

// redactInput returns a task input of about n bytes: prose with a secret
// in one of its forms after every gap bytes or more, as a JSON string.
func redactInput(n, gap int) []byte {
	g := &secretGen{rng: rand.New(rand.NewPCG(16, 26))}
	var b strings.Builder
	for b.Len() < n {
		for start := b.Len(); b.Len()-start < gap || b.Len() == start; {
			b.WriteString(g.words(40 + g.rng.IntN(40)))
			b.WriteString("\n")
		}
		form, _ := formsOfSecrets[g.rng.IntN(len(formsOfSecrets))].make(g)
		b.WriteString(form)
		b.WriteString("\n")
	}
	js, _ := json.Marshal(map[string]string{"input": b.String()})
	return js
}

// adversarialInput repeats the openings of every value form without ever
// closing one, so each scan runs as far as it can.
func adversarialInput(n int) []byte {
	parts := []string{`password='`, `token="`, `secret=\"`, `api_key=<`, "auth:\n  ", `--token `, `"password":[`,
		`"secret":"`, `-----BEGIN PRIVATE KEY-----`, `postgres://u:`, `Bearer `, `\\\"`, `\"`, `'`, `x `}
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString(parts[i%len(parts)])
		b.WriteString(parts[(i*7)%len(parts)])
	}
	js, _ := json.Marshal(map[string]string{"input": b.String()})
	return js
}

// redactInputs are the inputs of BenchmarkRedact's size cases: prose
// with a secret in some form every 4 KB (typical), every few hundred
// bytes (dense), and openings of value forms that never close.
var redactInputs = []struct {
	name string
	make func(int) []byte
}{{"", func(n int) []byte { return redactInput(n, 4096) }}, {"-dense", func(n int) []byte { return redactInput(n, 0) }}, {"-unclosed", adversarialInput}}
