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
	windowed uint64   // the rules run on windows around their hints
	patterns []string // user patterns, for Patterns
}

type rule struct {
	name    string
	maxHint int // the length of the longest hint
	re      *regexp.Regexp
	repl    []byte      // template for ReplaceAll; nil means use group or value
	value   valueFunc   // reads the secret after a match of re (a name and its separator)
	confirm confirmFunc // whether an occurrence of a hint can be in an anchor (windowed rules)
	group   int         // user rules: index of the "secret" group, or 0 for the whole match
	hints   [][]byte    // lower-case substrings one of which must occur; none means always run
	user    bool
}

// secretName matches a field or parameter name that holds a secret: one
// that ends in one of these words, with any prefix (db_password,
// aws_secret_access_key, X-Auth-Token, clientSecret, SECRET_KEY). Names
// that only contain such a word (max_tokens, token_count, author,
// passwordless) do not match, because the name must end where the
// separator begins.
const secretName = `[A-Za-z0-9_.-]*?(?:password|passwd|passphrase|pwd|secret|token|api[-_]?key|apikey|access[-_]?key|private[-_]?key|` +
	`secret[-_]?key|signing[-_]?key|encryption[-_]?key|auth|authorization|bearer|credentials?|cookie)`

// wordStart stands for \b before a word, and also matches after an
// escape in a JSON string (\nsk-… is a key at the start of a line). It
// is group 1 of the expressions that begin with it.
const wordStart = `(^|[^A-Za-z0-9_]|\\[nrtbf])`

// builtinRules are always on; configuration can add rules, never remove
// these.
//
// All but the first are windowed (a value function): the expression
// finds only a short anchor, the name of a secret and its separator or
// the prefix of a key format, and is run only on a window around each
// occurrence of one of the rule's hints, which every anchor contains near
// its end (see redact_hits.go); the function then reads the value on
// the whole input, whose forms (quoted, escaped, bracketed, on the next
// line, an array) no linear-time expression can tell apart (see
// redact_values.go). Repetitions after the hint are bounded so that the
// window holds every anchor.
var builtinRules = []struct {
	name, re, repl string
	value          valueFunc
	confirm        confirmFunc
	hints          []string
}{{
	name:  "private key",
	re:    `-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----`,
	repl:  Redacted,
	hints: []string{"private key-----"},
}, {
	// Header lines in text: "Authorization: Bearer …", "x-api-key: …".
	name:    "secret header",
	re:      `(?i)` + wordStart + `((?:proxy-)?authorization|x-api-key|x-goog-api-key|api-key)[ \t]{0,16}:`,
	value:   headerValue,
	confirm: confirmHeader,
	hints:   []string{"authoriz", "api-key"},
}, {
	name:  "secret query parameter",
	re:    `(?i)[?&](?:api[-_]?key|key|access[-_]?token|token|sig|signature)=`,
	value: queryValue,
	hints: []string{"key=", "token=", "sig=", "signature="},
}, {
	// A JSON (or Python) field whose name says secret, at any depth, also
	// inside a JSON document that is itself a JSON string:
	// {"db_password":"…"}, {\"token\":\"…\"}, {'secret': '…'}, and its
	// value a string, a number or an array of them.
	name:    "secret field",
	re:      `(?i)(\\{0,15}["'])(` + secretName + `)(\\{0,15}["'])[ \t]{0,16}:[ \t]{0,16}`,
	value:   fieldValue,
	confirm: confirmField,
	hints:   secretEndings(`"`, `\`, `'`),
}, {
	// Text assignments: password=…, aws_secret_access_key = "…" (TOML),
	// password: … (YAML, headers, also with the value on the next,
	// indented line), X-Auth-Token: Bearer …, --password=….
	name:    "secret assignment",
	re:      `(?i)(?:^|[^A-Za-z0-9_.-]|\\[nrtbf])(` + secretName + `)[ \t]{0,16}(?::=|[:=])`,
	value:   assignedValue,
	confirm: confirmAssignment,
	hints:   secretEndings(":", "=", " ", "\t"),
}, {
	// Command-line flags: --password hunter2, -api-key "…", and the same
	// in an argument list: ["--token", "…"].
	name:    "secret flag",
	re:      `(?i)(?:^|[^A-Za-z0-9_.-]|\\[nrtbf])(--?` + secretName + `)(?:[ \t]|(\\{0,15}")[ \t]{0,16},[ \t]{0,16})`,
	value:   flagValue,
	confirm: confirmFlag,
	hints:   secretEndings(" ", "\t", `"`, `\`),
}, {
	// scheme://user:password@host keeps the user and the host.
	name:  "url password",
	re:    `(?i)[a-z][a-z0-9+.-]*://`,
	value: urlPassword,
	hints: []string{"://"},
}, {
	name:    "bearer token",
	re:      `(?i)` + wordStart + `bearer[ \t]{1,16}`,
	value:   tokenAfter(16, 0, isTokenByte),
	confirm: wordStartAfter(6),
	hints:   []string{"bearer"},
}, {
	// OpenAI (sk-, sk-proj-) and Anthropic (sk-ant-) keys.
	name:    "sk- key",
	re:      wordStart + `sk-`,
	value:   wholeToken(16, 0, false, isKeyByte),
	confirm: wordStartAfter(3),
	hints:   []string{"sk-"},
}, {
	name:    "aws access key",
	re:      wordStart + `(?:AKIA|ASIA)`,
	value:   wholeToken(16, 16, true, isUpperOrDigit),
	confirm: wordStartAfter(4),
	hints:   []string{"akia", "asia"},
}, {
	name:    "github token",
	re:      wordStart + `gh[pousr]_`,
	value:   wholeToken(30, 0, false, isAlnum),
	confirm: wordStartAfter(4),
	hints:   []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"},
}, {
	name:    "github fine-grained token",
	re:      wordStart + `github_pat_`,
	value:   wholeToken(22, 0, false, isWordByte),
	confirm: wordStartAfter(11),
	hints:   []string{"github_pat_"},
}, {
	name:    "slack token",
	re:      wordStart + `xox[abposr]-`,
	value:   wholeToken(10, 0, false, func(c byte) bool { return isAlnum(c) || c == '-' }),
	confirm: wordStartAfter(3),
	hints:   []string{"xox"},
}, {
	name:    "google api key",
	re:      wordStart + `AIza`,
	value:   wholeToken(35, 35, false, isKeyByte),
	confirm: wordStartAfter(4),
	hints:   []string{"aiza"},
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
		ru := rule{name: b.name, re: regexp.MustCompile(b.re), repl: []byte(b.repl), value: b.value, confirm: b.confirm}
		for _, h := range b.hints {
			ru.hints = append(ru.hints, []byte(h))
			ru.maxHint = max(ru.maxHint, len(h))
		}
		if ru.value != nil {
			r.windowed |= 1 << len(r.rules)
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

// Redact returns b with every secret replaced by [REDACTED]: what the
// patterns find and every literal registered with RegisterSecret. It
// returns b itself when nothing matched.
func (r *Redactor) Redact(b []byte) []byte {
	out, _ := r.redact(b, asText)
	return out
}

// RedactString is Redact for a string.
func (r *Redactor) RedactString(s string) string {
	out, _ := r.redact([]byte(s), asText)
	return string(out)
}

// redact also returns the first user rule that changed something, so a
// caller that needs valid JSON can blame it. The registered literals go
// first: a pattern that rewrote part of one would hide the rest from
// them.
func (r *Redactor) redact(b []byte, mode textMode) ([]byte, *rule) {
	if len(b) == 0 {
		return b, nil
	}
	out := b
	if lits := registeredSecrets(); lits != nil {
		out = lits.redact(out, mode)
	}
	return r.redactRun(out, r.hints.scan(out))
}

// redactRun is redact after the registered literals, running the rules
// in run (a superset of what r.hints.scan(out) finds).
func (r *Redactor) redactRun(out []byte, run uint64) ([]byte, *rule) {
	if run == 0 && len(r.rules) <= 64 {
		return out, nil
	}
	var blame *rule
	var hits []ruleHits // of the windowed rules still to run, for out as it is
	for i := range r.rules {
		ru := &r.rules[i]
		if i < 64 && run&(1<<i) == 0 {
			continue
		}
		var next []byte
		var ed []edit
		if r.windowed&(1<<i) != 0 {
			if hits == nil {
				hits = r.hits(out, run&r.windowed&^(1<<i-1))
			}
			next, ed = ru.replaceWindows(out, ru.windowsOf(out, &hits[i]))
		} else {
			if !ru.re.Match(out) {
				continue
			}
			next = ru.replace(out)
		}
		if len(next) != len(out) || len(out) > 0 && &next[0] != &out[0] {
			// run was computed before any replacement, but one only
			// removes text or puts [REDACTED] in, which holds no hint,
			// so it stays a superset of the rules that can match; the
			// hits of the rules still to run move with the text.
			if ed != nil {
				for j := i + 1; j < len(hits); j++ {
					hits[j].remap(ed, next)
				}
			} else {
				hits = nil
			}
			if ru.user && blame == nil {
				blame = ru
			}
		}
		out = next
	}
	return out, blame
}

func (ru *rule) replace(b []byte) []byte {
	switch {
	case ru.value != nil:
		return ru.replaceValues(b)
	case !ru.user:
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

// replaceValues runs a value rule: every match of its expression is the
// name of a secret and what separates it from the value, which the
// rule's function reads. A match that begins inside a value already
// redacted is gone.
func (ru *rule) replaceValues(b []byte) []byte {
	var ed []edit
	last := 0
	for _, m := range ru.re.FindAllSubmatchIndex(b, -1) {
		if m[0] < last {
			continue
		}
		n := len(ed)
		ed = ru.value(b, m, ed)
		if len(ed) > n {
			last = ed[len(ed)-1].hi
		}
	}
	return applyEdits(b, ed)
}

// redactJSON redacts an encoded JSON value and checks that user patterns
// left it valid.
func (r *Redactor) redactJSON(b []byte) ([]byte, error) {
	return validRedaction(r.redact(b, asJSON))
}

// redactJSONScanned is redactJSON for b whose hint scan the caller made:
// run holds every rule r.hints.scan(b) finds (see spanEncoder.hintScan).
// Registered literals, whose replacements the scan reads, take the whole
// way.
func (r *Redactor) redactJSONScanned(b []byte, run uint64) ([]byte, error) {
	if len(b) == 0 || registeredSecrets() != nil {
		return r.redactJSON(b)
	}
	return validRedaction(r.redactRun(b, run))
}

// validRedaction fails if the user rule blamed turned a JSON value into
// invalid JSON.
func validRedaction(out []byte, blame *rule) ([]byte, error) {
	if blame != nil && !json.Valid(out) {
		return nil, fmt.Errorf("redaction pattern %q turned a stored value into invalid JSON; make it match inside strings only", blame.name)
	}
	return out, nil
}

// redactOpaque redacts bytes of unknown format (checkpoint state): if they
// were JSON, user patterns must leave them JSON.
func (r *Redactor) redactOpaque(b []byte) ([]byte, error) {
	out, blame := r.redact(b, asOpaque)
	if blame != nil && json.Valid(b) && !json.Valid(out) {
		return nil, fmt.Errorf("redaction pattern %q turned checkpoint state into invalid JSON; make it match inside strings only", blame.name)
	}
	return out, nil
}
