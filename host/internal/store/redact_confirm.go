package store

// A confirmFunc looks at the bytes around one occurrence of a windowed
// rule's hint in b (ending at end) and reports whether an anchor of the
// rule can hold that occurrence; it says no only when none can. Then the
// occurrence opens no window. Prose is full of hints ("the auth token
// expired", "a password reset"): without these checks their windows
// cover most of it, and the expression runs on nearly every byte.
//
// Each check reads a bounded number of bytes, and one that would need to
// read further says yes: it never hides an anchor the expression would
// find. A rule before may have redacted a value next to an occurrence, so
// the occurrences are kept (ruleHits) and checked when the rule runs.
type confirmFunc func(b []byte, end int) bool

// isNameByte: the bytes of secretName's [A-Za-z0-9_.-].
func isNameByte(c byte) bool { return isWordByte(c) || c == '.' || c == '-' }

// skipSomeBlanks moves p over at most n spaces and tabs.
func skipSomeBlanks(b []byte, p, n int) int {
	for ; n > 0 && p < len(b) && (b[p] == ' ' || b[p] == '\t'); n-- {
		p++
	}
	return p
}

// isEscapeLetter: the letters of \n \r \t \b \f, which wordStart accepts
// before a name.
func isEscapeLetter(c byte) bool {
	return c == 'n' || c == 'r' || c == 't' || c == 'b' || c == 'f'
}

// confirmAssignment: the secret assignment's hints are a name's ending
// and the byte after it. The name is followed by at most 16 blanks and
// then := : or =, so after a blank the separator must come.
func confirmAssignment(b []byte, end int) bool {
	if c := b[end-1]; c == ':' || c == '=' {
		return true
	}
	p := skipSomeBlanks(b, end, 15) // the hint's own byte is the first blank
	return p < len(b) && (b[p] == ':' || b[p] == '=')
}

// confirmField: the secret field's hints are a name's ending and the
// first byte of its closing quote run (\{0,15}["']), which blanks and a
// colon follow.
func confirmField(b []byte, end int) bool {
	p := end - 1
	for n := 0; n < 15 && p < len(b) && b[p] == '\\'; n++ {
		p++
	}
	if p >= len(b) || b[p] != '"' && b[p] != '\'' {
		return false
	}
	p = skipSomeBlanks(b, p+1, 16)
	return p < len(b) && b[p] == ':'
}

// confirmFlag: a secret flag's name begins with a dash, right after a
// byte that is not a name's (or an escape such as \n, or the start).
// The name is the run of name bytes before the hint's last byte.
func confirmFlag(b []byte, end int) bool {
	q := end - 1
	for n := 0; q > 0 && isNameByte(b[q-1]); n++ {
		if n == maxNameBack {
			return true // a window would start inside the run: let it look
		}
		q--
	}
	if b[q] == '-' {
		return true
	}
	return q > 0 && b[q-1] == '\\' && isEscapeLetter(b[q]) && q+1 < end && b[q+1] == '-'
}

// confirmHeader: a secret header's name (which the hint begins) is
// followed by at most 16 blanks and a colon.
func confirmHeader(b []byte, end int) bool {
	p := end
	for n := 0; p < len(b) && isNameByte(b[p]); n++ {
		if n == 32 {
			return false // no header name the rule knows is this long
		}
		p++
	}
	p = skipSomeBlanks(b, p, 16)
	return p < len(b) && b[p] == ':'
}

// confirmWordStart: keys of a known format (sk-…) begin a word: the hint
// (which the match begins with) follows a byte that is not a word's, or
// an escape such as \n, or the start.
func confirmWordStart(b []byte, end, hint int) bool {
	p := end - hint
	if p <= 0 || !isWordByte(b[p-1]) {
		return true
	}
	return p >= 2 && b[p-2] == '\\' && isEscapeLetter(b[p-1])
}

// wordStartAfter is confirmWordStart for hints of n bytes.
func wordStartAfter(n int) confirmFunc {
	return func(b []byte, end int) bool { return confirmWordStart(b, end, n) }
}
