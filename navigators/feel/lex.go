package feel

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

type tokKind uint8

const (
	tEOF    tokKind = iota
	tName           // one word of a name; keywords are names too
	tNumber         // numeric literal
	tString         // string literal, unescaped
	tOp             // punctuation and operators
	tAt             // @ before a string: a temporal literal
)

type token struct {
	kind tokKind
	text string // name, operator, number text or unescaped string
	pos  Pos
	end  int // byte offset after the token
	// space reports whitespace (or a comment) right before the token, which
	// separates the words of a multi-word name.
	space bool
}

// Pos is a position in an expression: 1-based line and column (in
// characters), and the 0-based byte offset.
type Pos struct {
	Line, Col, Offset int
}

// String returns "line:column".
func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// SyntaxError is a parse error with the position of the offending text.
type SyntaxError struct {
	Pos Pos
	Msg string
}

// Error returns "line:column: message".
func (e *SyntaxError) Error() string { return e.Pos.String() + ": " + e.Msg }

type lexer struct {
	// special are declared names holding characters other names cannot
	// (Pre-bureau Risk, Approved/Declined), longest first.
	special []string
	src     string
	off     int
	line    int
	col     int
	toks    []token
}

// Limits that keep parsing bounded whatever the input.
const (
	// MaxSource is the longest expression Parse accepts, in bytes.
	MaxSource = 1 << 20
	// MaxDepth is the deepest nesting of expressions Parse accepts.
	MaxDepth = 200
)

func lex(src string, special ...string) ([]token, error) {
	if len(src) > MaxSource {
		return nil, &SyntaxError{Pos{1, 1, 0}, fmt.Sprintf("expression too long (%d bytes, limit %d)", len(src), MaxSource)}
	}
	if !utf8.ValidString(src) {
		i := 0
		for i < len(src) {
			r, n := utf8.DecodeRuneInString(src[i:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			i += n
		}
		return nil, &SyntaxError{posAt(src, i), "invalid UTF-8"}
	}
	lx := &lexer{src: src, line: 1, col: 1, special: special}
	for {
		space, err := lx.skipSpace()
		if err != nil {
			return nil, err
		}
		t, err := lx.next()
		if err != nil {
			return nil, err
		}
		t.space = space
		lx.toks = append(lx.toks, t)
		if t.kind == tEOF {
			return lx.toks, nil
		}
	}
}

func posAt(src string, off int) Pos {
	p := Pos{Line: 1, Col: 1}
	for i, r := range src {
		if i >= off {
			break
		}
		if r == '\n' {
			p.Line++
			p.Col = 1
		} else {
			p.Col++
		}
	}
	p.Offset = off
	return p
}

func (lx *lexer) pos() Pos { return Pos{lx.line, lx.col, lx.off} }

func (lx *lexer) advance(n int) {
	for _, r := range lx.src[lx.off : lx.off+n] {
		if r == '\n' {
			lx.line++
			lx.col = 1
		} else {
			lx.col++
		}
	}
	lx.off += n
}

func (lx *lexer) skipSpace() (bool, error) {
	start := lx.off
	for lx.off < len(lx.src) {
		r, n := utf8.DecodeRuneInString(lx.src[lx.off:])
		switch {
		case unicode.IsSpace(r) || r == '\u200B' || r == '\uFEFF':
			lx.advance(n)
		case strings.HasPrefix(lx.src[lx.off:], "//"):
			i := strings.IndexByte(lx.src[lx.off:], '\n')
			if i < 0 {
				i = len(lx.src) - lx.off
			}
			lx.advance(i)
		case strings.HasPrefix(lx.src[lx.off:], "/*"):
			p := lx.pos()
			i := strings.Index(lx.src[lx.off+2:], "*/")
			if i < 0 {
				return false, &SyntaxError{p, "unterminated comment"}
			}
			lx.advance(i + 4)
		default:
			return lx.off > start, nil
		}
	}
	return lx.off > start, nil
}

func isNameStart(r rune) bool {
	return r == '_' || r == '?' || unicode.IsLetter(r) || r > 0x7f && !unicode.IsSpace(r) && !unicode.IsPunct(r) && !unicode.IsSymbol(r) && !unicode.IsControl(r)
}

func isNamePart(r rune) bool {
	return isNameStart(r) && r != '?' || unicode.IsDigit(r) || r == '\'' || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r)
}

var ops3 = []string{"..."}
var ops2 = []string{"**", "!=", "<=", ">=", "..", "->"}

func (lx *lexer) next() (token, error) {
	p := lx.pos()
	if lx.off >= len(lx.src) {
		return token{kind: tEOF, pos: p, end: lx.off}, nil
	}
	rest := lx.src[lx.off:]
	r, n := utf8.DecodeRuneInString(rest)
	mk := func(k tokKind, text string, width int) token {
		lx.advance(width)
		return token{kind: k, text: text, pos: p, end: lx.off}
	}
	switch {
	case r >= '0' && r <= '9' || r == '.' && len(rest) > 1 && rest[1] >= '0' && rest[1] <= '9':
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i < len(rest)-1 && rest[i] == '.' && rest[i+1] >= '0' && rest[i+1] <= '9' {
			i++
			for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
				i++
			}
		}
		if i < len(rest) && (rest[i] == 'e' || rest[i] == 'E') {
			j := i + 1
			if j < len(rest) && (rest[j] == '+' || rest[j] == '-') {
				j++
			}
			if j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
				for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
					j++
				}
				i = j
			}
		}
		return mk(tNumber, rest[:i], i), nil
	case r == '"':
		s, w, err := unquote(rest)
		if err != nil {
			ep := p // an unterminated string is reported where it starts
			if w < len(rest) {
				ep.Col += utf8.RuneCountInString(rest[:w])
				ep.Offset += w
			}
			return token{}, &SyntaxError{ep, err.Error()}
		}
		return mk(tString, s, w), nil
	case r == '`':
		i := strings.IndexByte(rest[1:], '`')
		if i < 0 {
			return token{}, &SyntaxError{p, "unterminated `name`"}
		}
		t := mk(tName, rest[1:i+1], i+2)
		return t, nil
	case r == '@':
		return mk(tAt, "@", 1), nil
	case isNameStart(r):
		for _, sp := range lx.special {
			if strings.HasPrefix(rest, sp) {
				if r2, _ := utf8.DecodeRuneInString(rest[len(sp):]); len(sp) == len(rest) || !isNamePart(r2) {
					return mk(tName, sp, len(sp)), nil
				}
			}
		}
		i := n
		for i < len(rest) {
			r2, n2 := utf8.DecodeRuneInString(rest[i:])
			if !isNamePart(r2) {
				break
			}
			i += n2
		}
		return mk(tName, rest[:i], i), nil
	}
	for _, o := range ops3 {
		if strings.HasPrefix(rest, o) {
			return token{}, &SyntaxError{p, fmt.Sprintf("unexpected %q", o)}
		}
	}
	for _, o := range ops2 {
		if strings.HasPrefix(rest, o) {
			return mk(tOp, o, 2), nil
		}
	}
	if strings.ContainsRune("+-*/=<>()[]{},.:", r) {
		return mk(tOp, string(r), 1), nil
	}
	return token{}, &SyntaxError{p, fmt.Sprintf("unexpected character %q", r)}
}

// unquote reads a FEEL string literal at the start of s and returns its
// value and width. On error the width is where the problem is.
func unquote(s string) (string, int, error) {
	var b strings.Builder
	i := 1
	for i < len(s) {
		c := s[i]
		switch c {
		case '"':
			return b.String(), i + 1, nil
		case '\\':
			if i+1 >= len(s) {
				return "", i, fmt.Errorf("unterminated string")
			}
			e := s[i+1]
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case '"', '\\', '\'':
				b.WriteByte(e)
			case 'u':
				r, w, ok := hexRune(s[i+2:], 4)
				if !ok {
					return "", i, fmt.Errorf(`bad \u escape`)
				}
				i += 2 + w
				if utf16.IsSurrogate(r) && strings.HasPrefix(s[i:], `\u`) {
					if r2, w2, ok := hexRune(s[i+2:], 4); ok {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							b.WriteRune(d)
							i += 2 + w2
							continue
						}
					}
				}
				b.WriteRune(r)
				continue
			case 'U':
				r, w, ok := hexRune(s[i+2:], 6)
				if !ok || r > unicode.MaxRune {
					return "", i, fmt.Errorf(`bad \U escape`)
				}
				b.WriteRune(r)
				i += 2 + w
				continue
			default:
				// Regular-expression escapes such as "\d" and "\s" are kept
				// as written, as FEEL engines do.
				b.WriteByte('\\')
				b.WriteByte(e)
			}
			i += 2
		default:
			b.WriteByte(c)
			i++
		}
	}
	return "", len(s), fmt.Errorf("unterminated string")
}

func hexRune(s string, n int) (rune, int, bool) {
	if len(s) < n {
		return 0, 0, false
	}
	v, err := strconv.ParseUint(s[:n], 16, 32)
	if err != nil {
		return 0, 0, false
	}
	return rune(v), n, true
}
