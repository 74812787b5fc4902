package tomldoc

import (
	"strconv"
	"strings"
)

// BurntSushi/toml records the position of every key while parsing but does
// not export it (MetaData.keyInfo is private, see BurntSushi/toml#462), and
// it keys positions by the unindexed path, so the elements of an array of
// tables ([[steps]]) all share one entry. locate is a small second pass over
// a document that the parser has already accepted: it follows table
// headers, key/value lines and array elements and records the line of each,
// under paths whose array-of-tables elements are indexed ("steps.1.id").
// Because the input is known to be valid TOML, the scanner only has to skip
// strings, comments and nested values correctly; it never reports errors.

type locator struct {
	src    string
	i      int
	line   int
	lines  map[string]int
	arrays map[string]int // element count of each array of tables, by indexed path
}

func locate(src string) map[string]int {
	l := &locator{src: src, line: 1, lines: map[string]int{}, arrays: map[string]int{}}
	l.document()
	return l.lines
}

func (l *locator) peek(off int) byte {
	if l.i+off < len(l.src) {
		return l.src[l.i+off]
	}
	return 0
}

func (l *locator) record(path []string, line int) {
	k := strings.Join(path, ".")
	if _, ok := l.lines[k]; !ok {
		l.lines[k] = line
	}
}

// skipBlank skips spaces, tabs, comments and (when nl) newlines.
func (l *locator) skipBlank(nl bool) {
	for l.i < len(l.src) {
		switch c := l.src[l.i]; {
		case c == ' ' || c == '\t' || c == '\r':
			l.i++
		case c == '\n' && nl:
			l.i++
			l.line++
		case c == '#':
			for l.i < len(l.src) && l.src[l.i] != '\n' {
				l.i++
			}
		default:
			return
		}
	}
}

func (l *locator) document() {
	var table []string
	for {
		l.skipBlank(true)
		if l.i >= len(l.src) {
			return
		}
		if l.src[l.i] == '[' {
			table = l.header()
			continue
		}
		start := l.line
		key := l.key()
		if len(key) == 0 { // not a key: skip the line (cannot happen on valid input)
			l.skipLine()
			continue
		}
		path := append(append([]string(nil), table...), key...)
		for n := len(table) + 1; n <= len(path); n++ {
			l.record(path[:n], start)
		}
		l.skipBlank(false)
		if l.peek(0) == '=' {
			l.i++
		}
		l.value(path)
	}
}

func (l *locator) skipLine() {
	for l.i < len(l.src) && l.src[l.i] != '\n' {
		l.i++
	}
}

// header reads a [table] or [[array]] header and returns the indexed path.
func (l *locator) header() []string {
	line := l.line
	array := l.peek(1) == '['
	l.i++
	if array {
		l.i++
	}
	key := l.key()
	l.skipBlank(false)
	for l.i < len(l.src) && l.src[l.i] == ']' {
		l.i++
	}
	var path []string
	for n, part := range key {
		path = append(path, part)
		last := n == len(key)-1
		if last && array {
			k := strings.Join(path, ".")
			l.record(path, line)
			l.arrays[k]++
			path = append(path, strconv.Itoa(l.arrays[k]-1))
		} else if c, ok := l.arrays[strings.Join(path, ".")]; ok {
			path = append(path, strconv.Itoa(c-1))
		}
		l.record(path, line)
	}
	return path
}

// key reads a possibly dotted, possibly quoted key.
func (l *locator) key() []string {
	var parts []string
	for {
		l.skipBlank(false)
		var part string
		switch l.peek(0) {
		case '"':
			part = l.basicString()
		case '\'':
			l.i++
			j := strings.IndexByte(l.src[l.i:], '\'')
			if j < 0 {
				j = len(l.src) - l.i
			}
			part = l.src[l.i : l.i+j]
			l.i += j + 1
		default:
			j := l.i
			for j < len(l.src) && isBare(l.src[j]) {
				j++
			}
			if j == l.i {
				return parts
			}
			part = l.src[l.i:j]
			l.i = j
		}
		parts = append(parts, part)
		l.skipBlank(false)
		if l.peek(0) != '.' {
			return parts
		}
		l.i++
	}
}

func isBare(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// basicString reads a one-line "..." string and returns its decoded value.
func (l *locator) basicString() string {
	l.i++
	var b strings.Builder
	for l.i < len(l.src) {
		c := l.src[l.i]
		switch {
		case c == '"':
			l.i++
			return b.String()
		case c == '\n':
			return b.String()
		case c == '\\' && l.i+1 < len(l.src):
			l.i += 2
			switch e := l.src[l.i-1]; e {
			case 'b':
				b.WriteByte('\b')
			case 't':
				b.WriteByte('\t')
			case 'n':
				b.WriteByte('\n')
			case 'f':
				b.WriteByte('\f')
			case 'r':
				b.WriteByte('\r')
			case 'e':
				b.WriteByte(0x1b)
			case 'u', 'U', 'x':
				n := map[byte]int{'u': 4, 'U': 8, 'x': 2}[e]
				if l.i+n <= len(l.src) {
					if r, err := strconv.ParseUint(l.src[l.i:l.i+n], 16, 32); err == nil {
						b.WriteRune(rune(r))
						l.i += n
						continue
					}
				}
				b.WriteByte(e)
			default:
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
			l.i++
		}
	}
	return b.String()
}

// value skips one value, recording the line of each element of an array
// value (path.0, path.1, ...) and of each key of an inline table.
func (l *locator) value(path []string) {
	l.skipBlank(false)
	switch l.peek(0) {
	case '[':
		l.i++
		for n := 0; ; n++ {
			l.skipBlank(true)
			if l.i >= len(l.src) {
				return
			}
			if l.src[l.i] == ']' {
				l.i++
				return
			}
			elem := append(append([]string(nil), path...), strconv.Itoa(n))
			l.record(elem, l.line)
			at := l.i
			l.value(elem)
			l.skipBlank(true)
			if l.peek(0) == ',' {
				l.i++
			}
			if l.i == at { // not a value (cannot happen on valid input): move on
				l.i++
			}
		}
	case '{':
		l.i++
		for {
			l.skipBlank(true)
			if l.i >= len(l.src) {
				return
			}
			if l.src[l.i] == '}' {
				l.i++
				return
			}
			if l.src[l.i] == ',' {
				l.i++
				continue
			}
			line := l.line
			key := l.key()
			if len(key) == 0 {
				l.i++
				continue
			}
			sub := append(append([]string(nil), path...), key...)
			for n := len(path) + 1; n <= len(sub); n++ {
				l.record(sub[:n], line)
			}
			l.skipBlank(true)
			if l.peek(0) == '=' {
				l.i++
			}
			l.value(sub)
		}
	case '"':
		if strings.HasPrefix(l.src[l.i:], `"""`) {
			l.multiline(`"""`, true)
			return
		}
		l.basicString()
	case '\'':
		if strings.HasPrefix(l.src[l.i:], `'''`) {
			l.multiline(`'''`, false)
			return
		}
		l.i++
		for l.i < len(l.src) && l.src[l.i] != '\'' && l.src[l.i] != '\n' {
			l.i++
		}
		if l.peek(0) == '\'' {
			l.i++
		}
	default: // number, bool, date: up to a delimiter
		for l.i < len(l.src) {
			switch l.src[l.i] {
			case ',', ']', '}', '\n', '#':
				return
			}
			l.i++
		}
	}
}

// multiline skips a """ or ”' string, counting its newlines. Up to two
// quotes may directly precede the closing delimiter.
func (l *locator) multiline(delim string, escapes bool) {
	l.i += 3
	for l.i < len(l.src) {
		c := l.src[l.i]
		switch {
		case c == '\n':
			l.line++
			l.i++
		case c == '\\' && escapes:
			l.i++
			if l.peek(0) == '\n' {
				l.line++
			}
			l.i++
		case strings.HasPrefix(l.src[l.i:], delim):
			l.i += 3
			for n := 0; n < 2 && l.peek(0) == delim[0]; n++ {
				l.i++
			}
			return
		default:
			l.i++
		}
	}
}
