package store

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// MinSecretLen is the length below which RegisterSecret ignores a value:
// a short one ("a", "test") would take words out of every prompt.
const MinSecretLen = 8

// secrets is the process-wide set of literals every Redactor removes: the
// values of the keys, tokens and credentials the host holds.
var secrets struct {
	mu     sync.Mutex
	values map[string]struct{}
	set    atomic.Pointer[literalSet] // nil while there are none
}

// RegisterSecret adds value, the value of a key or secret the host holds
// (an API key read from the variable a provider's api_key_env names, the
// serve token, a credential bound to a plugin), to the literals every
// Redactor removes from whatever it redacts: stored records, logs
// (NewLogHandler) and canonical requests. It also registers the forms the
// value takes once encoded in JSON, in a JSON string inside JSON, and in
// a URL query, and reports whether it registered anything.
//
// A value shorter than MinSecretLen, or made only of letters (a word, as
// placeholder keys such as "placeholder" or "notneeded" are), is not
// registered: removing it would rewrite ordinary text, and with it the
// canonical requests replay matches recordings on.
//
// It is safe for concurrent use; a Redactor sees a registration at its
// next call.
func RegisterSecret(value string) bool {
	forms := secretForms(value)
	if len(forms) == 0 {
		return false
	}
	secrets.mu.Lock()
	defer secrets.mu.Unlock()
	if secrets.values == nil {
		secrets.values = map[string]struct{}{}
	}
	added := false
	for _, f := range forms {
		if _, ok := secrets.values[f]; !ok {
			secrets.values[f] = struct{}{}
			added = true
		}
	}
	if added {
		lits := make([]string, 0, len(secrets.values))
		for v := range secrets.values {
			lits = append(lits, v)
		}
		slices.Sort(lits) // the same automaton whatever the order of registration
		secrets.set.Store(newLiteralSet(lits))
	}
	return true
}

// registeredSecrets returns the current literal set, nil if empty.
func registeredSecrets() *literalSet { return secrets.set.Load() }

// secretForms returns value, trimmed, and its encoded forms, or nothing
// if it is not to be registered.
func secretForms(value string) []string {
	v := strings.TrimSpace(value)
	if len(v) < MinSecretLen || onlyLetters(v) || strings.Contains(v, Redacted) {
		return nil
	}
	forms := []string{v}
	add := func(f string) {
		if !slices.Contains(forms, f) {
			forms = append(forms, f)
		}
	}
	js := jsonString(v, true)
	add(js)
	add(jsonString(v, false))
	add(jsonString(js, true)) // inside a JSON document that is a string
	add(url.QueryEscape(v))
	return forms
}

// jsonString is s as encoding/json writes it inside quotes, with or
// without escaping <, > and &.
func jsonString(s string, html bool) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	_ = enc.Encode(s) // a string always encodes
	out := strings.TrimSuffix(b.String(), "\n")
	return out[1 : len(out)-1]
}

func onlyLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// textMode says what a Redactor is given, which decides where a
// registered literal may be replaced.
type textMode uint8

const (
	asText   textMode = iota // anything: every occurrence goes
	asJSON                   // valid JSON: only occurrences inside one string
	asOpaque                 // JSON or not: asJSON if it is valid JSON
)

// literalSet finds every occurrence of a set of literals in one pass: an
// Aho-Corasick automaton compiled to a DFA over byte classes, as hintSet
// is, but case-sensitive and reporting where each match lies.
type literalSet struct {
	class  [256]uint16 // byte → class; 0 is "in no literal"
	nclass int
	delta  []int32 // state*nclass + class → next state
	// longest[s] is the length of the longest literal that ends in state
	// s, 0 if none: its occurrence covers every shorter one ending there.
	longest []int32
}

func newLiteralSet(lits []string) *literalSet {
	l := &literalSet{}
	n := 1
	for _, lit := range lits {
		for i := 0; i < len(lit); i++ {
			if l.class[lit[i]] == 0 {
				l.class[lit[i]] = uint16(n)
				n++
			}
		}
	}
	l.nclass = n
	type node struct {
		next  map[uint16]int32
		depth int32
		term  bool
	}
	nodes := []node{{next: map[uint16]int32{}}}
	for _, lit := range lits {
		s := int32(0)
		for i := 0; i < len(lit); i++ {
			cl := l.class[lit[i]]
			nx, ok := nodes[s].next[cl]
			if !ok {
				nx = int32(len(nodes))
				nodes = append(nodes, node{next: map[uint16]int32{}, depth: nodes[s].depth + 1})
				nodes[s].next[cl] = nx
			}
			s = nx
		}
		nodes[s].term = true
	}
	l.delta = make([]int32, len(nodes)*n)
	l.longest = make([]int32, len(nodes))
	fail := make([]int32, len(nodes))
	var queue []int32
	for cl := 1; cl < n; cl++ {
		if nx, ok := nodes[0].next[uint16(cl)]; ok {
			l.delta[cl] = nx
			queue = append(queue, nx)
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if nodes[s].term {
			l.longest[s] = nodes[s].depth
		} else {
			l.longest[s] = l.longest[fail[s]]
		}
		for cl := 0; cl < n; cl++ {
			if nx, ok := nodes[s].next[uint16(cl)]; ok && cl != 0 {
				fail[nx] = l.delta[int(fail[s])*n+cl]
				l.delta[int(s)*n+cl] = nx
				queue = append(queue, nx)
			} else {
				l.delta[int(s)*n+cl] = l.delta[int(fail[s])*n+cl]
			}
		}
	}
	return l
}

// span is b[lo:hi].
type span struct{ lo, hi int }

// matches returns the occurrences of the literals in b, merged where they
// overlap, in order.
func (l *literalSet) matches(b []byte) []span {
	var out []span
	delta, class, longest, nclass := l.delta, &l.class, l.longest, int32(l.nclass)
	s := int32(0)
	for i, c := range b {
		s = delta[s*nclass+int32(class[c])]
		if n := longest[s]; n > 0 {
			lo, hi := i+1-int(n), i+1
			if k := len(out) - 1; k >= 0 && lo < out[k].hi {
				out[k].lo = min(out[k].lo, lo)
				out[k].hi = hi
				continue
			}
			out = append(out, span{lo, hi})
		}
	}
	return out
}

// redact replaces every occurrence of a literal in b, in JSON only those
// that lie inside one string, from the start of a character to the end
// of one: a literal that is also part of a number, or that runs across a
// quote, stays rather than break the document.
func (l *literalSet) redact(b []byte, mode textMode) []byte {
	ms := l.matches(b)
	if len(ms) == 0 {
		return b
	}
	if mode == asOpaque {
		mode = asText
		if json.Valid(b) {
			mode = asJSON
		}
	}
	if mode == asJSON {
		ms = inJSONStrings(b, ms)
	}
	ed := make([]edit, len(ms))
	for i, m := range ms {
		ed[i] = edit{m.lo, m.hi, Redacted}
	}
	return applyEdits(b, ed)
}

// inJSONStrings keeps the spans of valid JSON b that lie within one
// string, beginning where a character (or escape sequence) begins and
// ending where one ends.
func inJSONStrings(b []byte, ms []span) []span {
	// The positions asked about, in order: each span's lo and hi.
	const (
		outside = -1 // not inside a string, or inside an escape sequence
	)
	type answer struct {
		str     int  // index of the string, or outside
		closing bool // the position of the string's closing quote
	}
	ans := make([]answer, 2*len(ms))
	pos := func(q int) int {
		if q%2 == 0 {
			return ms[q/2].lo
		}
		return ms[q/2].hi
	}
	q, str, nstr := 0, outside, 0
	for i := 0; q < len(ans); {
		for q < len(ans) && pos(q) < i { // inside the escape just passed
			ans[q] = answer{str: outside}
			q++
		}
		for q < len(ans) && pos(q) == i {
			ans[q] = answer{str: str, closing: str != outside && i < len(b) && b[i] == '"'}
			q++
		}
		if i >= len(b) {
			for ; q < len(ans); q++ {
				ans[q] = answer{str: outside}
			}
			break
		}
		switch {
		case str == outside:
			if b[i] == '"' {
				str = nstr
				nstr++
			}
			i++
		case b[i] == '"':
			str = outside
			i++
		case b[i] == '\\':
			i = escapeEnd(b, i)
		default:
			i++
		}
	}
	kept := ms[:0]
	for k, m := range ms {
		lo, hi := ans[2*k], ans[2*k+1]
		if lo.str != outside && !lo.closing && hi.str == lo.str {
			kept = append(kept, m)
		}
	}
	return kept
}

// RedactSecrets returns s without the registered secrets (RegisterSecret)
// and nothing else: for text shown to the user, such as an error message,
// where a pattern could take out an example ("Authorization: Bearer
// TOKEN") but a key the host holds must never appear.
func RedactSecrets(s string) string {
	lits := registeredSecrets()
	if lits == nil {
		return s
	}
	return string(lits.redact([]byte(s), asText))
}
