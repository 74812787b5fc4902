// Package tomlpos guards and indexes a TOML document before it is decoded:
// one linear pass refuses a document that is too large or nested too deeply
// (either would let a decoder run out of time, memory or stack), and records
// the line of every key, table header and array element so that problems
// found after decoding (unknown keys, bad values, references to missing
// things) can still say `file:line:`.
//
// It is shared by the host and by navigators and plugins that read TOML, so
// that every TOML file sextant reads is limited and positioned the same way.
//
// The package never decodes values and never reports syntax errors: both
// stay with the caller's TOML library, which should be given the bytes only
// after Scan accepted them. It must stay linear in the size of its input
// whatever the input, valid or not.
package tomlpos

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/sextant-dev/sextant/sdk"
)

const (
	// MaxSize is the largest TOML document Scan accepts, in bytes (16 MiB):
	// a thousand times the largest real strategy, small enough that
	// decoding it cannot exhaust memory.
	MaxSize = 16 << 20
	// MaxDepth is the deepest nesting Scan accepts: the key parts (of
	// table headers, dotted keys and inline tables' keys) and the arrays on
	// the way from the document root to a value, counted together. Real
	// documents stay below ten; `x = [[[…]]]` may hold 63 arrays.
	MaxDepth = 64
)

// ReadFile reads the file at path, but never more than MaxSize+1 bytes:
// enough for Scan to refuse an oversized file without reading all of it.
// Errors are those of os.Open and Read.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, MaxSize+1))
}

// Scan checks data against MaxSize and MaxDepth and indexes the line of
// every key. A document over a limit gives an error matching sdk.ErrInvalid
// with one problem positioned at file (and, for depth, the line); Scan then
// returns no index. A document that is not valid TOML is indexed as far as
// it makes sense; the decoder reports the syntax error itself.
func Scan(file string, data []byte) (*Index, error) {
	if len(data) > MaxSize {
		return nil, sdk.Invalid(sdk.Problem{File: file,
			Message: fmt.Sprintf("over the size limit for a TOML file (%d bytes read, limit %d MiB)", len(data), MaxSize>>20)})
	}
	// Most lines of a document hold one key: size the index for them, but
	// not beyond one key per 32 bytes, so that blank lines cost nothing.
	hint := min(bytes.Count(data, []byte{'\n'})+1, len(data)/32)
	s := &scanner{src: string(data), ix: newIndex(hint), line: 1}
	s.document()
	if s.deep > 0 {
		return nil, sdk.Invalid(sdk.Problem{File: file, Line: s.deep,
			Message: fmt.Sprintf("nesting deeper than %d levels", MaxDepth)})
	}
	return s.ix, nil
}

// Index maps key paths of one document to the 1-based lines that define
// them. It is a trie of nodes: table keys hang under their table, elements
// under their array. An array also carries, as keys, the union of its
// elements' keys at their first occurrence, so that a path without indexes
// ("rule.match", as BurntSushi/toml's MetaData names keys) finds the first
// element that defines it.
type Index struct {
	keys   map[keyRef]int32
	arrays map[int32]int32 // array node -> its slot in elems
	elems  [][]int32       // by slot: the array's element nodes, in order
	line   []int32         // by node; node 0 is the root
	plain  []int32         // by node: the node of the same path without indexes
}

type keyRef struct {
	parent int32
	name   string
}

// newIndex makes an index sized for about hint keys.
func newIndex(hint int) *Index {
	return &Index{keys: make(map[keyRef]int32, hint), arrays: map[int32]int32{},
		line: make([]int32, 1, hint+1), plain: make([]int32, 1, hint+1)}
}

func (ix *Index) node(line int, plain int32) int32 {
	id := int32(len(ix.line))
	if plain < 0 {
		plain = id
	}
	ix.line = append(ix.line, int32(line))
	ix.plain = append(ix.plain, plain)
	return id
}

// key returns the child name of parent, creating it at line when new.
func (ix *Index) key(parent int32, name string, line int) int32 {
	if id, ok := ix.keys[keyRef{parent, name}]; ok {
		return id
	}
	plain := int32(-1)
	if p := ix.plain[parent]; p != parent {
		plain = ix.key(p, name, line)
	}
	id := ix.node(line, plain)
	ix.keys[keyRef{parent, name}] = id
	return id
}

// elements returns the element nodes of the array n, in order.
func (ix *Index) elements(n int32) []int32 {
	if slot, ok := ix.arrays[n]; ok {
		return ix.elems[slot]
	}
	return nil
}

// addElem appends an element at line to the array parent. An element's
// path without indexes is its array's. Elements live in a slice per array,
// not in a map: a long array costs 12 bytes an element.
func (ix *Index) addElem(parent int32, line int) int32 {
	slot, ok := ix.arrays[parent]
	if !ok {
		slot = int32(len(ix.elems))
		ix.arrays[parent] = slot
		ix.elems = append(ix.elems, nil)
	}
	id := ix.node(line, ix.plain[parent])
	ix.elems[slot] = append(ix.elems[slot], id)
	return id
}

// child returns the node under n named p: an array element when p is an
// index of n's elements, else a key.
func (ix *Index) child(n int32, p string) (int32, bool) {
	if i, isIdx := index(p); isIdx {
		if els := ix.elements(n); i < len(els) {
			return els[i], true
		}
	}
	id, ok := ix.keys[keyRef{n, p}]
	return id, ok
}

// Line returns the line of the key at path, or of its nearest ancestor
// that has one, or 0 when none is known. Pass array indexes as decimal
// strings ("gates", "1", "use"); a path that omits them ("gates", "use")
// finds the first element that has the key.
func (ix *Index) Line(path ...string) int {
	if ix == nil {
		return 0
	}
	n, line := int32(0), 0
	for _, p := range path {
		next, ok := ix.child(n, p)
		if !ok {
			break
		}
		n = next
		if l := ix.line[n]; l > 0 {
			line = int(l)
		}
	}
	return line
}

// Has reports whether the document defines path itself: a key, a table
// (also one defined implicitly by a header or dotted key below it) or an
// array element. Unlike Line it does not fall back to an ancestor.
func (ix *Index) Has(path ...string) bool {
	if ix == nil {
		return false
	}
	n := int32(0)
	for _, p := range path {
		next, ok := ix.child(n, p)
		if !ok {
			return false
		}
		n = next
	}
	return true
}

// index reads p as an array index: decimal digits, no sign, no leading zero.
func index(p string) (int, bool) {
	if p == "" || len(p) > 9 || (p[0] == '0' && len(p) > 1) {
		return 0, false
	}
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(p)
	return n, err == nil
}

// scanner walks a document once, front to back. It follows table headers,
// key/value pairs and nested values well enough to index valid TOML, and on
// any input it only moves forward, so it is linear whatever it is given.
// Recursion is bounded by MaxDepth.
type scanner struct {
	src string
	i   int
	ix  *Index
	// line is the line at offset off; lineAt counts forward from there.
	line, off int
	deep      int // line where nesting first went over MaxDepth; 0 if never
}

func (s *scanner) lineAt(off int) int {
	if off < s.off { // never happens: the scanner moves forward only
		s.line, s.off = 1, 0
	}
	s.line += strings.Count(s.src[s.off:off], "\n")
	s.off = off
	return s.line
}

func (s *scanner) tooDeep(depth, off int) bool {
	if depth <= MaxDepth {
		return false
	}
	if s.deep == 0 {
		s.deep = s.lineAt(off)
	}
	return true
}

func (s *scanner) peek(k int) byte {
	if s.i+k < len(s.src) {
		return s.src[s.i+k]
	}
	return 0
}

func (s *scanner) eof() bool { return s.i >= len(s.src) || s.deep > 0 }

// skipBlank skips spaces, tabs, comments and (when nl) newlines.
func (s *scanner) skipBlank(nl bool) {
	for s.i < len(s.src) {
		switch c := s.src[s.i]; {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n' && nl:
			s.i++
		case c == '#':
			s.skipLine()
		default:
			return
		}
	}
}

func (s *scanner) skipLine() {
	if j := strings.IndexByte(s.src[s.i:], '\n'); j >= 0 {
		s.i += j
	} else {
		s.i = len(s.src)
	}
}

func (s *scanner) document() {
	table, depth := int32(0), 0
	for {
		s.skipBlank(true)
		if s.eof() {
			return
		}
		if s.src[s.i] == '[' {
			table, depth = s.header()
			continue
		}
		at := s.i
		n, d := s.keyPath(table, depth)
		if n < 0 {
			s.skipLine() // not a key: invalid, the decoder will say so
			continue
		}
		s.skipBlank(false)
		if s.peek(0) == '=' {
			s.i++
		}
		s.value(n, d)
		if s.i == at {
			s.i++
		}
	}
}

// header reads a [table] or [[array]] header and returns its node (for an
// array of tables, its new element) and depth.
func (s *scanner) header() (int32, int) {
	line := s.lineAt(s.i)
	array := s.peek(1) == '['
	s.i++
	if array {
		s.i++
	}
	n, depth := int32(0), 0
	for {
		name, ok := s.keyPart()
		if !ok {
			break
		}
		depth++
		if s.tooDeep(depth, s.i) {
			return 0, 0
		}
		n = s.ix.key(n, name, line)
		last := s.peek(0) != '.'
		if !last {
			s.i++
		}
		switch els := s.ix.elements(n); {
		case last && array:
			n = s.ix.addElem(n, line)
		case len(els) > 0: // [a.b] after [[a]]: inside a's latest element
			n = els[len(els)-1]
		}
		if last {
			break
		}
	}
	s.skipBlank(false)
	for s.peek(0) == ']' {
		s.i++
	}
	return n, depth
}

// keyPath reads a possibly dotted key below node n at depth, creating its
// nodes, and returns the last one and its depth; -1 when there is no key.
func (s *scanner) keyPath(n int32, depth int) (int32, int) {
	line := s.lineAt(s.i)
	first := true
	for {
		name, ok := s.keyPart()
		if !ok {
			if first {
				return -1, depth
			}
			return n, depth
		}
		first = false
		depth++
		if s.tooDeep(depth, s.i) {
			return -1, depth
		}
		n = s.ix.key(n, name, line)
		if s.peek(0) != '.' {
			return n, depth
		}
		s.i++
	}
}

// keyPart reads one bare or quoted key part and the blanks after it.
func (s *scanner) keyPart() (string, bool) {
	s.skipBlank(false)
	var part string
	switch s.peek(0) {
	case '"':
		part = s.basicString()
	case '\'':
		s.i++
		j := strings.IndexAny(s.src[s.i:], "'\n")
		if j < 0 {
			j = len(s.src) - s.i
		}
		part = s.src[s.i : s.i+j]
		s.i += j
		if s.peek(0) == '\'' {
			s.i++
		}
	default:
		j := s.i
		for j < len(s.src) && isBare(s.src[j]) {
			j++
		}
		if j == s.i {
			return "", false
		}
		part = s.src[s.i:j]
		s.i = j
	}
	s.skipBlank(false)
	return part, true
}

func isBare(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// basicString reads a one-line "..." string and returns its decoded value
// (a key must be indexed under the name the decoder gives it).
func (s *scanner) basicString() string {
	s.i++
	start := s.i
	for s.i < len(s.src) {
		switch s.src[s.i] {
		case '"':
			raw := s.src[start:s.i]
			s.i++
			return unescape(raw)
		case '\n':
			return unescape(s.src[start:s.i])
		case '\\':
			s.i += 2
		default:
			s.i++
		}
	}
	s.i = len(s.src)
	return unescape(s.src[start:])
}

// unescape decodes the escapes of a TOML basic string; a bad escape is
// kept as written (the decoder reports it).
func unescape(raw string) string {
	if strings.IndexByte(raw, '\\') < 0 {
		return raw
	}
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' || i+1 >= len(raw) {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := raw[i]; e {
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
			n := 2
			if e == 'u' {
				n = 4
			} else if e == 'U' {
				n = 8
			}
			if i+1+n <= len(raw) {
				if r, err := strconv.ParseUint(raw[i+1:i+1+n], 16, 32); err == nil {
					b.WriteRune(rune(r))
					i += n
					continue
				}
			}
			b.WriteByte('\\')
			b.WriteByte(e)
		default:
			b.WriteByte(e)
		}
	}
	return b.String()
}

// value skips one value below node n at depth, indexing the elements of
// arrays and the keys of inline tables.
func (s *scanner) value(n int32, depth int) {
	s.skipBlank(false)
	switch s.peek(0) {
	case '[':
		if s.tooDeep(depth+1, s.i) {
			return
		}
		s.i++
		for {
			s.skipBlank(true)
			if s.eof() {
				return
			}
			if s.src[s.i] == ']' {
				s.i++
				return
			}
			at := s.i
			s.value(s.ix.addElem(n, s.lineAt(s.i)), depth+1)
			s.skipBlank(true)
			if s.peek(0) == ',' {
				s.i++
			}
			if s.i == at { // not a value (invalid): move on
				s.i++
			}
		}
	case '{': // an inline table adds no level itself; its keys do
		s.i++
		for {
			s.skipBlank(true)
			if s.eof() {
				return
			}
			switch s.src[s.i] {
			case '}':
				s.i++
				return
			case ',':
				s.i++
				continue
			}
			k, d := s.keyPath(n, depth)
			if k < 0 {
				if s.eof() {
					return
				}
				s.i++ // not a key (invalid): move on
				continue
			}
			s.skipBlank(true)
			if s.peek(0) == '=' {
				s.i++
			}
			s.value(k, d)
		}
	case '"':
		if strings.HasPrefix(s.src[s.i:], `"""`) {
			s.multiline(`"""`, true)
			return
		}
		s.basicString()
	case '\'':
		if strings.HasPrefix(s.src[s.i:], `'''`) {
			s.multiline(`'''`, false)
			return
		}
		s.i++
		if j := strings.IndexAny(s.src[s.i:], "'\n"); j >= 0 {
			s.i += j
			if s.src[s.i] == '\'' {
				s.i++
			}
		} else {
			s.i = len(s.src)
		}
	default: // number, boolean, date: up to a delimiter
		j := strings.IndexAny(s.src[s.i:], ",]}\n#")
		if j < 0 {
			j = len(s.src) - s.i
		}
		s.i += j
	}
}

// multiline skips a """ or ”' string. Up to two quotes may directly
// precede the closing delimiter.
func (s *scanner) multiline(delim string, escapes bool) {
	s.i += 3
	for s.i < len(s.src) {
		stops := delim[:1]
		if escapes {
			stops = delim[:1] + "\\"
		}
		j := strings.IndexAny(s.src[s.i:], stops)
		if j < 0 {
			break
		}
		s.i += j
		if s.src[s.i] == '\\' {
			s.i += 2
			continue
		}
		if strings.HasPrefix(s.src[s.i:], delim) {
			s.i += 3
			for n := 0; n < 2 && s.peek(0) == delim[0]; n++ {
				s.i++
			}
			return
		}
		s.i++
	}
	s.i = len(s.src)
}
