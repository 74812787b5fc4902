package store

import "bytes"

// A valueFunc reads the secret value that follows m, a match of its
// rule's expression in b (m as FindAllSubmatchIndex gives it, the match
// ending where the value may begin), and appends the edits that redact
// it.
//
// The value functions read text that may be raw, or JSON whose strings
// hold it, or a JSON document inside such a string: a quote is then
// written with 0, 1, 3, 7 … backslashes before it (its nesting level).
// So that redacted JSON stays valid, an edit never cuts an escape
// sequence, never crosses the end of the string it starts in, and puts a
// number in quotes of its level when it turns it into [REDACTED].
//
// Each scan stops at the first quote that closes the value or the string
// around it; a value that does not close falls back to its first word.
// A scan can pass over quotes only of deeper levels, so every byte is
// read by at most one scan per level and redaction stays linear in the
// input.
type valueFunc func(b []byte, m []int, ed []edit) []edit

// edit replaces b[lo:hi] with repl.
type edit struct {
	lo, hi int
	repl   string
}

// maxQuoteLevel is the deepest nesting read: a JSON document in a string
// of a JSON document in a string of the stored JSON, and one more.
const maxQuoteLevel = 4

// applyEdits returns b with the edits (in order, not overlapping) made,
// or b itself if they change nothing.
func applyEdits(b []byte, ed []edit) []byte {
	changed := false
	for _, e := range ed {
		if string(b[e.lo:e.hi]) != e.repl {
			changed = true
			break
		}
	}
	if !changed {
		return b
	}
	out := make([]byte, 0, len(b))
	last := 0
	for _, e := range ed {
		out = append(out, b[last:e.lo]...)
		out = append(out, e.repl...)
		last = e.hi
	}
	return append(out, b[last:]...)
}

// redactSpan appends the edit that redacts b[lo:hi], if it is not empty.
func redactSpan(ed []edit, lo, hi int) []edit {
	if hi <= lo {
		return ed
	}
	return append(ed, edit{lo, hi, Redacted})
}

// fieldValue reads the value of a JSON or Python field whose name says
// secret (groups: 1 the key's opening quote, 2 the name, 3 its closing
// quote): a string, a number or an array of them. An object is left for
// its own fields; true, false and null hold nothing.
func fieldValue(b []byte, m []int, ed []edit) []edit {
	open, closing := b[m[2]:m[3]], b[m[6]:m[7]]
	if !bytes.Equal(open, closing) {
		return ed // "password' is no key
	}
	p := m[1]
	if p >= len(b) {
		return ed
	}
	if b[p] == '[' {
		return arrayValues(b, p+1, closing, ed)
	}
	ed, _ = scalarValue(b, p, closing, ed)
	return ed
}

// scalarValue redacts the string or number at p, a value inside a
// document whose keys are quoted with quote; ok is false if there is
// none, next is where the value ends.
func scalarValue(b []byte, p int, quote []byte, ed []edit) (out []edit, next int) {
	if p >= len(b) {
		return ed, -1
	}
	if b[p] == '\'' {
		if end, ok := singleQuoted(b, p+1); ok {
			return redactSpan(ed, p+1, end), end + 1
		}
		return ed, -1
	}
	if level, n, ok := quoteAt(b, p); ok {
		if end, next, ok := quoted(b, p+n, level); ok {
			return redactSpan(ed, p+n, end), next
		}
		return ed, -1
	}
	if end := numberEnd(b, p); end > p {
		return append(ed, edit{p, end, string(quote) + Redacted + string(quote)}), end
	}
	return ed, -1
}

// arrayValues redacts every string and number of the array whose first
// element may begin at p, up to its closing bracket or to an element of
// another kind (a nested array or object, left alone).
func arrayValues(b []byte, p int, quote []byte, ed []edit) []edit {
	for {
		p = skipJSONSpace(b, p)
		if p >= len(b) {
			return ed
		}
		switch b[p] {
		case ']':
			return ed
		case ',':
			p++
			continue
		}
		var next int
		if ed, next = scalarValue(b, p, quote, ed); next < 0 {
			return ed
		}
		p = next
	}
}

// assignedValue reads the value of a text assignment (group 1 the name):
// after blanks, an authorization scheme is kept and what follows it
// redacted; a value that is missing from the name's line is taken from
// the next line if that is indented (YAML).
func assignedValue(b []byte, m []int, ed []edit) []edit {
	p := skipBlanks(b, m[1])
	if q := afterScheme(b, p); q > p {
		return lineValue(b, q, -1, ed)
	}
	if q, level, ok := nextIndentedLine(b, p); ok {
		return lineValue(b, q, level, ed)
	}
	return lineValue(b, p, -1, ed)
}

// flagValue reads the argument of a command-line flag (group 1 the
// flag): the next word, unless it is another flag, or in an argument
// list the next string (group 2 the flag's closing quote).
func flagValue(b []byte, m []int, ed []edit) []edit {
	p := m[1]
	if m[4] >= 0 { // ["--token", "…"]
		if level, n, ok := quoteAt(b, p); ok && n == m[5]-m[4] {
			if end, _, ok := quoted(b, p+n, level); ok {
				return redactSpan(ed, p+n, end)
			}
		}
		return ed
	}
	if p = skipBlanks(b, p); p >= len(b) || b[p] == '-' {
		return ed
	}
	return lineValue(b, p, -1, ed)
}

// headerValue reads the value of a header line (Authorization: …): the
// rest of the line, scheme and all, unless it is quoted (then the
// assignment rule reads it).
func headerValue(b []byte, m []int, ed []edit) []edit {
	p := skipBlanks(b, m[1])
	if p >= len(b) || b[p] == '"' || b[p] == '\\' || isSpace(b[p]) {
		return ed
	}
	end := p
	for end < len(b) && b[end] != '\r' && b[end] != '\n' && b[end] != '"' && b[end] != '\\' {
		end++
	}
	return redactSpan(ed, p, end)
}

// queryValue reads the value of a URL query parameter.
func queryValue(b []byte, m []int, ed []edit) []edit {
	end := m[1]
	for end < len(b) && !isSpace(b[end]) && b[end] != '&' && b[end] != '#' && b[end] != '"' && b[end] != '\\' {
		end++
	}
	return redactSpan(ed, m[1], end)
}

// urlPassword reads the password of scheme://user:password@host.
func urlPassword(b []byte, m []int, ed []edit) []edit {
	stop := func(c byte) bool { return isSpace(c) || c == '/' || c == '@' || c == '"' || c == '\'' || c == '\\' }
	p := m[1]
	for p < len(b) && !stop(b[p]) && b[p] != ':' {
		p++
	}
	if p >= len(b) || b[p] != ':' {
		return ed
	}
	lo := p + 1
	end := lo
	for end < len(b) && !stop(b[end]) {
		end++
	}
	if end == lo || end >= len(b) || b[end] != '@' {
		return ed
	}
	return redactSpan(ed, lo, end)
}

// tokenAfter returns the value function of a token that follows its
// anchor (Bearer …): at least minLen bytes of which, kept by the anchor.
func tokenAfter(minLen, maxLen int, in func(byte) bool) valueFunc {
	return func(b []byte, m []int, ed []edit) []edit {
		if end, ok := tokenEnd(b, m[1], minLen, maxLen, false, in); ok {
			return redactSpan(ed, m[1], end)
		}
		return ed
	}
}

// wholeToken returns the value function of a key whose anchor is its
// prefix (sk-, AKIA, ghp_, …, after group 1): the prefix and at least
// minLen bytes (at most maxLen, unless 0) of the alphabet in go, and with
// boundary the key must not run on into a word.
func wholeToken(minLen, maxLen int, boundary bool, in func(byte) bool) valueFunc {
	return func(b []byte, m []int, ed []edit) []edit {
		if end, ok := tokenEnd(b, m[1], minLen, maxLen, boundary, in); ok {
			return redactSpan(ed, m[3], end)
		}
		return ed
	}
}

func tokenEnd(b []byte, p, minLen, maxLen int, boundary bool, in func(byte) bool) (int, bool) {
	end := p
	for end < len(b) && in(b[end]) && (maxLen == 0 || end-p < maxLen) {
		end++
	}
	if end-p < minLen || boundary && end < len(b) && isWordByte(b[end]) {
		return 0, false
	}
	return end, true
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isWordByte(c byte) bool { return isAlnum(c) || c == '_' }

func isUpperOrDigit(c byte) bool { return c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }

// isKeyByte: the alphabet of sk-… and AIza… keys.
func isKeyByte(c byte) bool { return isWordByte(c) || c == '-' }

// isTokenByte: the alphabet of a bearer token (RFC 6750's b64token).
func isTokenByte(c byte) bool {
	return isAlnum(c) || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' || c == '=' || c == '-'
}

// lineValue redacts the value at p: quoted (in any quotes, or <angle
// brackets>), or else the first word; or, for a value on a line of its
// own at the given nesting level (not -1), the rest of the line.
func lineValue(b []byte, p, lineLevel int, ed []edit) []edit {
	if p >= len(b) {
		return ed
	}
	if b[p] == '\'' {
		if end, ok := singleQuoted(b, p+1); ok {
			return redactSpan(ed, p+1, end)
		}
		p++
	} else if n := angleOpen(b, p); n > 0 {
		if end, ok := angled(b, p+n); ok {
			return redactSpan(ed, p+n, end)
		}
		p += n
	} else if level, n, ok := quoteAt(b, p); ok {
		if end, _, ok := quoted(b, p+n, level); ok {
			return redactSpan(ed, p+n, end)
		}
		p += n
	}
	if lineLevel >= 0 {
		return redactSpan(ed, p, lineEnd(b, p, lineLevel))
	}
	return redactSpan(ed, p, wordEnd(b, p))
}

// backslashes returns the length of the run of backslashes at i and the
// byte after it (0 at the end of b).
func backslashes(b []byte, i int) (run int, next byte) {
	for i+run < len(b) && b[i+run] == '\\' {
		run++
	}
	if i+run < len(b) {
		next = b[i+run]
	}
	return run, next
}

// quoteAt reports whether b[p:] opens a double-quoted string, and at
// which nesting level: a quote after 2^level-1 backslashes (n bytes).
func quoteAt(b []byte, p int) (level, n int, ok bool) {
	r := 0
	for p+r < len(b) && b[p+r] == '\\' {
		r++
	}
	if p+r >= len(b) || b[p+r] != '"' {
		return 0, 0, false
	}
	for level = 0; level <= maxQuoteLevel; level++ {
		if r == 1<<level-1 {
			return level, r + 1, true
		}
	}
	return 0, 0, false
}

// quoted finds the end of a double-quoted string of the given level
// whose content begins at p: end is where its closing quote (with its
// backslashes) begins, next where it ends. A quote after a run of r
// backslashes closes it when r mod 2^(level+1) is 2^level-1, is part of
// it when the remainder is all ones (an escaped quote of this level),
// and otherwise closes a string around it: the value does not close.
func quoted(b []byte, p, level int) (end, next int, ok bool) {
	k, mod := 1<<level-1, 1<<(level+1)
	for i := p; i < len(b); i++ {
		switch b[i] {
		case '"':
			r := 0
			for j := i - 1; j >= p && b[j] == '\\'; j-- {
				r++
			}
			switch r % mod {
			case k:
				if i-k < p {
					return 0, 0, false
				}
				return i - k, i + 1, true
			case mod - 1:
				continue
			}
			return 0, 0, false
		case '\n', '\r':
			return 0, 0, false
		}
	}
	return 0, 0, false
}

// singleQuoted finds the closing ' of a value that began after one at p.
// It gives up at the end of a line or at a " that would end a JSON
// string around it.
func singleQuoted(b []byte, p int) (end int, ok bool) {
	for i := p; i < len(b); {
		switch b[i] {
		case '\'':
			return i, true
		case '"', '\n', '\r':
			return 0, false
		case '\\':
			r, c := backslashes(b, i)
			switch {
			case c == 'n' || c == 'r':
				return 0, false
			case c == '\'' && r%2 == 0:
				return i + r, true
			case c == '\'' || c == '"':
				i += r + 1 // an escaped quote, of this or a deeper level
			default:
				i += r
			}
			continue
		}
		i++
	}
	return 0, false
}

// angleOpen returns the length of the < (raw, or \u003c as encoding/json
// writes it, at any level) that opens a <value> at p, or 0.
func angleOpen(b []byte, p int) int {
	if p < len(b) && b[p] == '<' {
		return 1
	}
	if r, c := backslashes(b, p); r > 0 && c == 'u' && hexEscape(b, p+r, "u003c") {
		return r + 5
	}
	return 0
}

// hexEscape reports whether b[i:] begins with esc (u003c …), in either case.
func hexEscape(b []byte, i int, esc string) bool {
	return len(b)-i >= len(esc) && bytes.EqualFold(b[i:i+len(esc)], []byte(esc))
}

// angled finds the > of a <value> whose content begins at p.
func angled(b []byte, p int) (end int, ok bool) {
	for i := p; i < len(b); {
		switch b[i] {
		case '>':
			return i, i > p
		case '<', '"', '\n', '\r':
			return 0, false
		case '\\':
			r, c := backslashes(b, i)
			switch {
			case c == 'u' && hexEscape(b, i+r, "u003e"):
				return i, i > p
			case c == 'u' && hexEscape(b, i+r, "u003c"), c == 'n', c == 'r', c == '"':
				return 0, false
			}
			i += r
			continue
		}
		i++
	}
	return 0, false
}

// wordEnd is where an unquoted value that begins at p ends: at white
// space, a quote, &, < or >, or an escape sequence of any level other
// than an escaped backslash (\n, \", \u0026 …), so that it never ends
// inside one.
func wordEnd(b []byte, p int) int {
	i := p
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r', '\f', '\v', '"', '\'', '&', '<', '>':
			return i
		case '\\':
			r, c := backslashes(b, i)
			switch c {
			case 0, '"', '/', 'b', 'f', 'n', 'r', 't', 'u':
				return i
			}
			i += r
			continue
		}
		i++
	}
	return i
}

// lineEnd is where a value that fills the rest of its line ends, the
// line being text at the given nesting level (0 raw, 1 in a JSON string,
// 2 in a JSON string in a JSON string …): at a line break of that level
// or an outer one, or at a quote that ends a string around it, less
// trailing blanks. A quote or line break of a deeper level is part of the
// value.
func lineEnd(b []byte, p, level int) int {
	i := p
loop:
	for i < len(b) {
		switch b[i] {
		case '\n', '\r':
			break loop
		case '"':
			if level > 0 {
				break loop
			}
		case '\\':
			r, c := backslashes(b, i)
			switch {
			case c == 0:
				break loop
			case (c == 'n' || c == 'r') && level > 0 && r <= 1<<(level-1):
				break loop
			case c == '"' && r%(1<<level) != 1<<level-1:
				break loop
			}
			i += r + 1
			continue
		}
		i++
	}
	for i > p && (b[i-1] == ' ' || b[i-1] == '\t') {
		i--
	}
	return i
}

// numberEnd is where a JSON number that begins at p ends (p if none).
func numberEnd(b []byte, p int) int {
	i := p
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i >= len(b) || b[i] < '0' || b[i] > '9' {
		return p
	}
	for i < len(b) && (b[i] >= '0' && b[i] <= '9' || b[i] == '.' || b[i] == 'e' || b[i] == 'E' || b[i] == '+' || b[i] == '-') {
		i++
	}
	return i
}

// skipBlanks skips spaces and tabs.
func skipBlanks(b []byte, p int) int {
	for p < len(b) && (b[p] == ' ' || b[p] == '\t') {
		p++
	}
	return p
}

// skipJSONSpace skips white space between JSON tokens, raw or escaped
// (a pretty-printed document inside a string).
func skipJSONSpace(b []byte, p int) int {
	for p < len(b) {
		switch b[p] {
		case ' ', '\t', '\n', '\r':
			p++
			continue
		case '\\':
			if p+1 < len(b) && (b[p+1] == 'n' || b[p+1] == 't' || b[p+1] == 'r') {
				p += 2
				continue
			}
		}
		return p
	}
	return p
}

// afterScheme returns where the credentials begin if b[p:] is an
// authorization scheme (Bearer, Basic, Token, Digest) and blanks, or p.
func afterScheme(b []byte, p int) int {
	for _, s := range [...]string{"bearer", "basic", "token", "digest"} {
		if len(b)-p > len(s) && bytes.EqualFold(b[p:p+len(s)], []byte(s)) {
			if q := skipBlanks(b, p+len(s)); q > p+len(s) {
				return q
			}
		}
	}
	return p
}

// nextIndentedLine reports whether b[p:] is a line break followed by an
// indented line, where that line's text begins, and the nesting level
// the break's form tells: raw (0), \n (1), \\n (2), \\\\n (3) ….
func nextIndentedLine(b []byte, p int) (start, level int, ok bool) {
	q, level, ok := lineBreak(b, p)
	if !ok {
		return 0, 0, false
	}
	start = q
	for q < len(b) {
		if b[q] == ' ' || b[q] == '\t' {
			q++
			continue
		}
		if r, c := backslashes(b, q); r > 0 && c == 't' && level > 0 && r == 1<<(level-1) {
			q += r + 1
			continue
		}
		if q == start {
			return 0, 0, false
		}
		if _, _, isBreak := lineBreak(b, q); isBreak {
			return 0, 0, false
		}
		return q, level, true
	}
	return 0, 0, false
}

// lineBreak reports whether a line break (\n or \r\n, raw or escaped at
// some level) begins at p, where it ends, and its level.
func lineBreak(b []byte, p int) (end, level int, ok bool) {
	if p >= len(b) {
		return 0, 0, false
	}
	switch b[p] {
	case '\n':
		return p + 1, 0, true
	case '\r':
		if p+1 < len(b) && b[p+1] == '\n' {
			return p + 2, 0, true
		}
		return 0, 0, false
	}
	r, c := backslashes(b, p)
	if r == 0 || r&(r-1) != 0 || r > 1<<(maxQuoteLevel-1) {
		return 0, 0, false
	}
	for level = 1; 1<<(level-1) != r; level++ {
	}
	switch c {
	case 'n':
		return p + r + 1, level, true
	case 'r':
		if r2, c2 := backslashes(b, p+r+1); r2 == r && c2 == 'n' {
			return p + 2*r + 2, level, true
		}
	}
	return 0, 0, false
}

// escapeEnd is where the JSON escape sequence that begins with the
// backslash at i ends: \uXXXX is six bytes, any other two.
func escapeEnd(b []byte, i int) int {
	n := 2
	if i+1 < len(b) && b[i+1] == 'u' {
		n = 6
	}
	return min(i+n, len(b))
}
