package feel

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// keywords cannot be a one-word name; they may be words of longer ones
// ("date and time").
var keywords = map[string]bool{
	"and": true, "or": true, "in": true, "between": true, "instance": true, "of": true,
	"if": true, "then": true, "else": true, "for": true, "return": true, "some": true,
	"every": true, "satisfies": true, "function": true, "true": true, "false": true, "null": true,
}

// staticNames are the multi-word names every expression knows: built-in
// functions, properties and type names.
var staticNames = []string{
	"time offset", "start included", "end included",
	"days and time duration", "years and months duration", "date and time",
}

type parser struct {
	toks     []token
	i        int
	depth    int
	noFilter bool // parsing a range end: `[` closes the range, not a filter
	// names and prefixes hold the multi-word names this expression adds
	// (context keys, parameters, WithNames) to the static ones.
	names    map[string]bool
	prefixes map[string]bool
	// special are declared names the lexer reads as one token because
	// they hold operator characters (Pre-bureau, Approved/Declined).
	special []string
	// shared holds the names of a WithNames option, built once.
	shared *parser
}

// static multi-word names and their word prefixes, built once.
var staticSet, staticPrefixes = func() (map[string]bool, map[string]bool) {
	p := &parser{names: map[string]bool{}, prefixes: map[string]bool{}}
	for _, n := range staticNames {
		p.addName(n)
	}
	return p.names, p.prefixes
}()

func (p *parser) isName(n string) bool {
	return staticSet[n] || p.names[n] || p.shared != nil && p.shared.names[n]
}

func (p *parser) isPrefix(n string) bool {
	return staticPrefixes[n] || p.prefixes[n] || p.shared != nil && p.shared.prefixes[n]
}

// Option configures parsing.
type Option func(*parser)

// WithNames declares variable names that contain spaces and keywords
// (such as "in stock"), so that the parser reads them as one name. Words
// side by side that are not keywords are one name anyway ("Order Total"),
// and names of built-in functions, context keys and parameters written in
// the expression itself need no declaration. A declared name may also hold
// the characters DMN allows in names besides letters (`-`, `/`, `+`, `*`,
// `.`): written in full, it is read as the name, not as an operation.
func WithNames(names ...string) Option {
	// The set is built once, here, and shared by every Parse given this
	// option: a DMN model parses thousands of expressions with the same
	// names.
	set := &parser{names: map[string]bool{}, prefixes: map[string]bool{}}
	for _, n := range names {
		set.addName(n)
		if isSpecialName(n) && !slices.Contains(set.special, n) {
			set.special = append(set.special, n)
		}
	}
	// Longest first, so that "a-b-c" wins over "a-b".
	sort.SliceStable(set.special, func(i, j int) bool { return len(set.special[i]) > len(set.special[j]) })
	return func(p *parser) {
		if p.shared == nil && len(p.special) == 0 {
			p.shared, p.special = set, set.special
			return
		}
		for n := range set.names {
			p.addName(n)
		}
		for _, n := range set.special {
			if !slices.Contains(p.special, n) {
				p.special = append(p.special, n)
			}
		}
		sort.SliceStable(p.special, func(i, j int) bool { return len(p.special[i]) > len(p.special[j]) })
	}
}

// isSpecialName reports whether n is a name only the lexer can keep
// whole: it starts like a name and holds an operator character.
func isSpecialName(n string) bool {
	r, _ := utf8.DecodeRuneInString(n)
	if !isNameStart(r) || r == '?' {
		return false
	}
	return strings.ContainsAny(n, "-+*/.")
}

func newParser(toks []token, opts []Option) *parser {
	p := &parser{toks: toks, names: map[string]bool{}, prefixes: map[string]bool{}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func (p *parser) addName(n string) {
	words := strings.Fields(n)
	if len(words) < 2 {
		return
	}
	n = strings.Join(words, " ")
	p.names[n] = true
	for i := 1; i < len(words); i++ {
		p.prefixes[strings.Join(words[:i], " ")] = true
	}
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) peekN(n int) token {
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return p.toks[len(p.toks)-1]
}
func (p *parser) advance() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) isOp(s string) bool {
	t := p.toks[p.i]
	return t.kind == tOp && t.text == s
}

func (p *parser) isWord(s string) bool {
	t := p.toks[p.i]
	return t.kind == tName && t.text == s
}

func (p *parser) errAt(t token, format string, args ...any) error {
	return &SyntaxError{Pos: t.pos, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) unexpected(t token) error {
	switch t.kind {
	case tEOF:
		return p.errAt(t, "unexpected end of expression")
	case tString:
		return p.errAt(t, "unexpected string %q", t.text)
	}
	return p.errAt(t, "unexpected %q", t.text)
}

func (p *parser) expectOp(s string) (token, error) {
	if !p.isOp(s) {
		t := p.peek()
		if t.kind == tEOF {
			return t, p.errAt(t, "unexpected end of expression, want %q", s)
		}
		return t, p.errAt(t, "unexpected %s, want %q", describe(t), s)
	}
	return p.advance(), nil
}

func (p *parser) expectWord(s string) error {
	if !p.isWord(s) {
		t := p.peek()
		if t.kind == tEOF {
			return p.errAt(t, "unexpected end of expression, want %q", s)
		}
		return p.errAt(t, "unexpected %s, want %q", describe(t), s)
	}
	p.advance()
	return nil
}

func describe(t token) string {
	switch t.kind {
	case tString:
		return fmt.Sprintf("string %q", t.text)
	case tEOF:
		return "end of expression"
	}
	return fmt.Sprintf("%q", t.text)
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > MaxDepth {
		return p.errAt(p.peek(), "expression nested too deeply (limit %d)", MaxDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// name reads a (possibly multi-word) name at the cursor: the longest run of
// words that is a known name, else the first word.
func (p *parser) name() (string, token) {
	first := p.advance()
	best, bestN := first.text, 0
	cur := first.text
	for k := 0; ; k++ {
		t := p.peekN(k)
		if t.kind != tName || !p.isPrefix(cur) {
			break
		}
		cur += " " + t.text
		if p.isName(cur) {
			best, bestN = cur, k+1
		}
	}
	p.i += bestN
	// Two names side by side are never valid FEEL, so further plain words
	// (not keywords) continue the name: `Order Total`, `first name`.
	for {
		t := p.peek()
		if t.kind != tName || keywords[t.text] || t.text == "?" {
			break
		}
		best += " " + t.text
		p.advance()
	}
	return best, first
}

func (p *parser) parseExpr() (node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	return p.parseOr()
}

func (p *parser) parseOr() (node, error) {
	l, err := p.parseAnd()
	if err != nil {
		return nil, err
	}
	for p.isWord("or") {
		p.advance()
		r, err := p.parseAnd()
		if err != nil {
			return nil, err
		}
		l = &orNode{l, r}
	}
	return l, nil
}

func (p *parser) parseAnd() (node, error) {
	l, err := p.parseCmp()
	if err != nil {
		return nil, err
	}
	for p.isWord("and") {
		p.advance()
		r, err := p.parseCmp()
		if err != nil {
			return nil, err
		}
		l = &andNode{l, r}
	}
	return l, nil
}

func (p *parser) parseCmp() (node, error) {
	l, err := p.parseAdd()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		switch {
		case t.kind == tOp && (t.text == "=" || t.text == "!=" || t.text == "<" || t.text == "<=" || t.text == ">" || t.text == ">="):
			p.advance()
			r, err := p.parseAdd()
			if err != nil {
				return nil, err
			}
			l = &cmpNode{op: t.text, l: l, r: r}
		case t.kind == tName && t.text == "between":
			p.advance()
			lo, err := p.parseAdd()
			if err != nil {
				return nil, err
			}
			if err := p.expectWord("and"); err != nil {
				return nil, err
			}
			hi, err := p.parseAdd()
			if err != nil {
				return nil, err
			}
			l = &betweenNode{x: l, lo: lo, hi: hi}
		case t.kind == tName && t.text == "in":
			p.advance()
			tests, err := p.parseInTests()
			if err != nil {
				return nil, err
			}
			l = &inNode{x: l, tests: tests}
		case t.kind == tName && t.text == "instance" && p.peekN(1).kind == tName && p.peekN(1).text == "of":
			p.advance()
			p.advance()
			ty, err := p.parseType()
			if err != nil {
				return nil, err
			}
			l = &instanceNode{x: l, t: ty}
		default:
			return l, nil
		}
	}
}

func (p *parser) parseAdd() (node, error) {
	l, err := p.parseMul()
	if err != nil {
		return nil, err
	}
	for p.isOp("+") || p.isOp("-") {
		op := p.advance().text
		r, err := p.parseMul()
		if err != nil {
			return nil, err
		}
		l = fold(&arithNode{op: op[0], l: l, r: r})
	}
	return l, nil
}

func (p *parser) parseMul() (node, error) {
	l, err := p.parsePow()
	if err != nil {
		return nil, err
	}
	for p.isOp("*") || p.isOp("/") {
		op := p.advance().text
		r, err := p.parsePow()
		if err != nil {
			return nil, err
		}
		l = fold(&arithNode{op: op[0], l: l, r: r})
	}
	return l, nil
}

func (p *parser) parsePow() (node, error) {
	l, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	for p.isOp("**") {
		p.advance()
		r, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		l = fold(&arithNode{op: '^', l: l, r: r})
	}
	return l, nil
}

func (p *parser) parseUnary() (node, error) {
	if p.isOp("-") {
		p.advance()
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		x, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		return fold(&negNode{x}), nil
	}
	return p.parsePostfix()
}

func (p *parser) parsePostfix() (node, error) {
	x, err := p.parsePrimary()
	if err != nil {
		return nil, err
	}
	for {
		switch {
		case p.isOp("."):
			p.advance()
			t := p.peek()
			if t.kind != tName {
				return nil, p.errAt(t, "unexpected %s after \".\", want a name", describe(t))
			}
			n, _ := p.name()
			x = &pathNode{x: x, name: n}
		case p.isOp("[") && !p.noFilter:
			p.advance()
			save := p.noFilter
			p.noFilter = false
			f, err := p.parseExpr()
			p.noFilter = save
			if err != nil {
				return nil, err
			}
			if _, err := p.expectOp("]"); err != nil {
				return nil, err
			}
			x = &filterNode{x: x, f: f}
		case p.isOp("("):
			c, err := p.parseCall(x)
			if err != nil {
				return nil, err
			}
			x = c
		default:
			return x, nil
		}
	}
}

func (p *parser) parseCall(fn node) (node, error) {
	open := p.advance()
	save := p.noFilter
	p.noFilter = false
	defer func() { p.noFilter = save }()
	c := &callNode{fn: fn, pos: open.pos}
	if r, ok := fn.(*refNode); ok {
		c.bi = builtins[r.name]
	}
	if p.isOp(")") {
		p.advance()
		return c, nil
	}
	// Named arguments: words followed by ":".
	named := false
	for k := 0; p.peekN(k).kind == tName; k++ {
		if n := p.peekN(k + 1); n.kind == tOp && n.text == ":" {
			named = true
			break
		}
	}
	for {
		if named {
			var words []string
			for p.peek().kind == tName {
				words = append(words, p.advance().text)
			}
			if len(words) == 0 {
				return nil, p.errAt(p.peek(), "unexpected %s, want a parameter name", describe(p.peek()))
			}
			if _, err := p.expectOp(":"); err != nil {
				return nil, err
			}
			c.names = append(c.names, strings.Join(words, " "))
		}
		a, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		c.args = append(c.args, a)
		if p.isOp(",") {
			p.advance()
			continue
		}
		if _, err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return c, nil
	}
}

func (p *parser) parsePrimary() (node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	t := p.peek()
	switch t.kind {
	case tNumber:
		p.advance()
		n, err := ParseNumber(t.text)
		if err != nil {
			return nil, p.errAt(t, "bad number %q", t.text)
		}
		return &litNode{n}, nil
	case tString:
		p.advance()
		return &litNode{t.text}, nil
	case tAt:
		p.advance()
		s := p.peek()
		if s.kind != tString {
			return nil, p.errAt(s, "unexpected %s after \"@\", want a string", describe(s))
		}
		p.advance()
		v := temporalLiteral(s.text)
		if v == nil {
			return nil, p.errAt(s, "invalid temporal literal @%q", s.text)
		}
		return &litNode{v}, nil
	case tOp:
		switch t.text {
		case "(":
			return p.parseParen()
		case "[":
			return p.parseBracket()
		case "]":
			p.advance()
			lo, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			if _, err := p.expectOp(".."); err != nil {
				return nil, err
			}
			return p.parseRangeEnd(lo, false)
		case "{":
			return p.parseContext()
		case "<", "<=", ">", ">=", "=", "!=":
			p.advance()
			x, err := p.parseAdd()
			if err != nil {
				return nil, err
			}
			return &cmpRangeNode{op: t.text, x: x}, nil
		}
		return nil, p.unexpected(t)
	case tName:
		switch t.text {
		case "true":
			p.advance()
			return &litNode{true}, nil
		case "false":
			p.advance()
			return &litNode{false}, nil
		case "null":
			p.advance()
			return &litNode{nil}, nil
		case "if":
			return p.parseIf()
		case "for":
			return p.parseFor()
		case "some", "every":
			return p.parseQuant()
		case "function":
			return p.parseFunction()
		}
		if keywords[t.text] && !p.isPrefix(t.text) {
			return nil, p.unexpected(t)
		}
		n, _ := p.name()
		return &refNode{name: n, pos: t.pos}, nil
	}
	return nil, p.unexpected(t)
}

func (p *parser) parseParen() (node, error) {
	p.advance()
	save := p.noFilter
	p.noFilter = false
	defer func() { p.noFilter = save }()
	e, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	if p.isOp("..") {
		p.advance()
		return p.parseRangeEnd(e, false)
	}
	if _, err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return e, nil
}

func (p *parser) parseBracket() (node, error) {
	p.advance()
	save := p.noFilter
	p.noFilter = false
	defer func() { p.noFilter = save }()
	l := &listNode{}
	if p.isOp("]") {
		p.advance()
		return fold(l), nil
	}
	first, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	if p.isOp("..") {
		p.advance()
		return p.parseRangeEnd(first, true)
	}
	l.elems = append(l.elems, first)
	for p.isOp(",") {
		p.advance()
		e, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		l.elems = append(l.elems, e)
	}
	if _, err := p.expectOp("]"); err != nil {
		return nil, err
	}
	return fold(l), nil
}

// parseRangeEnd parses `hi` and the closing bracket of a range whose start
// is lo.
func (p *parser) parseRangeEnd(lo node, loClosed bool) (node, error) {
	save := p.noFilter
	p.noFilter = true
	hi, err := p.parseExpr()
	p.noFilter = save
	if err != nil {
		return nil, err
	}
	t := p.peek()
	r := &rangeNode{lo: lo, hi: hi, loClosed: loClosed}
	switch {
	case t.kind == tOp && t.text == "]":
		r.hiClosed = true
	case t.kind == tOp && (t.text == ")" || t.text == "["):
	default:
		if t.kind == tEOF {
			return nil, p.errAt(t, "unexpected end of expression, want \"]\" or \")\" to close the range")
		}
		return nil, p.errAt(t, "unexpected %s, want \"]\" or \")\" to close the range", describe(t))
	}
	p.advance()
	return fold(r), nil
}

func (p *parser) parseContext() (node, error) {
	p.advance()
	save := p.noFilter
	p.noFilter = false
	defer func() { p.noFilter = save }()
	c := &contextNode{}
	if p.isOp("}") {
		p.advance()
		return c, nil
	}
	for {
		t := p.peek()
		var key string
		switch t.kind {
		case tString:
			key = p.advance().text
		case tName:
			var words []string
			for p.peek().kind == tName {
				words = append(words, p.advance().text)
			}
			key = strings.Join(words, " ")
		default:
			return nil, p.errAt(t, "unexpected %s, want a context key", describe(t))
		}
		p.addName(key)
		if _, err := p.expectOp(":"); err != nil {
			return nil, err
		}
		v, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		for _, k := range c.keys {
			if k == key {
				return nil, p.errAt(t, "duplicate context key %q", key)
			}
		}
		c.keys = append(c.keys, key)
		c.vals = append(c.vals, v)
		if p.isOp(",") {
			p.advance()
			continue
		}
		if _, err := p.expectOp("}"); err != nil {
			return nil, err
		}
		return c, nil
	}
}

func (p *parser) parseIf() (node, error) {
	p.advance()
	c, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	if err := p.expectWord("then"); err != nil {
		return nil, err
	}
	a, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	if err := p.expectWord("else"); err != nil {
		return nil, err
	}
	b, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	return &ifNode{c, a, b}, nil
}

// parseIters reads `name in expr [.. expr], ...` up to the closing keyword.
func (p *parser) parseIters(allowRange bool) ([]iter, error) {
	var its []iter
	for {
		t := p.peek()
		if t.kind != tName || keywords[t.text] {
			return nil, p.errAt(t, "unexpected %s, want a variable name", describe(t))
		}
		var words []string
		for p.peek().kind == tName && !p.isWord("in") {
			words = append(words, p.advance().text)
		}
		name := strings.Join(words, " ")
		p.addName(name)
		if err := p.expectWord("in"); err != nil {
			return nil, err
		}
		e, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		it := iter{name: name, in: e}
		if allowRange && p.isOp("..") {
			p.advance()
			if it.to, err = p.parseExpr(); err != nil {
				return nil, err
			}
		}
		its = append(its, it)
		if !p.isOp(",") {
			return its, nil
		}
		p.advance()
	}
}

func (p *parser) parseFor() (node, error) {
	p.advance()
	its, err := p.parseIters(true)
	if err != nil {
		return nil, err
	}
	if err := p.expectWord("return"); err != nil {
		return nil, err
	}
	body, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	fn := &forNode{iters: its, body: body}
	walk(body, func(x node) {
		if r, ok := x.(*refNode); ok && r.name == "partial" {
			fn.partial = true
		}
	})
	return fn, nil
}

func (p *parser) parseQuant() (node, error) {
	every := p.advance().text == "every"
	its, err := p.parseIters(false)
	if err != nil {
		return nil, err
	}
	if err := p.expectWord("satisfies"); err != nil {
		return nil, err
	}
	body, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	return &quantNode{every: every, iters: its, body: body}, nil
}

func (p *parser) parseFunction() (node, error) {
	p.advance()
	if _, err := p.expectOp("("); err != nil {
		return nil, err
	}
	f := &funcNode{}
	for !p.isOp(")") {
		t := p.peek()
		if t.kind != tName {
			return nil, p.errAt(t, "unexpected %s, want a parameter name", describe(t))
		}
		var words []string
		for p.peek().kind == tName {
			words = append(words, p.advance().text)
		}
		name := strings.Join(words, " ")
		p.addName(name)
		f.params = append(f.params, name)
		var ty *ftype
		if p.isOp(":") {
			p.advance()
			var err error
			if ty, err = p.parseType(); err != nil {
				return nil, err
			}
		}
		f.types = append(f.types, ty)
		if p.isOp(",") {
			p.advance()
			continue
		}
		if !p.isOp(")") {
			return nil, p.errAt(p.peek(), "unexpected %s, want \",\" or \")\"", describe(p.peek()))
		}
	}
	p.advance()
	if p.isWord("external") {
		return nil, p.errAt(p.peek(), "external functions are not supported")
	}
	body, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	f.body = body
	return f, nil
}

// parseInTests reads the right side of `in`: one positive unary test, or a
// parenthesised list of them (which may be an open range `(a..b]`).
func (p *parser) parseInTests() ([]*utest, error) {
	if !p.isOp("(") {
		t, err := p.parseTest(false)
		if err != nil {
			return nil, err
		}
		return []*utest{t}, nil
	}
	p.advance()
	save := p.noFilter
	p.noFilter = false
	defer func() { p.noFilter = save }()
	var tests []*utest
	for {
		t, err := p.parseTest(false)
		if err != nil {
			return nil, err
		}
		if len(tests) == 0 && t.op == "" && p.isOp("..") {
			p.advance()
			r, err := p.parseRangeEnd(t.x, false)
			if err != nil {
				return nil, err
			}
			return []*utest{{x: r}}, nil
		}
		tests = append(tests, t)
		if p.isOp(",") {
			p.advance()
			continue
		}
		if _, err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return tests, nil
	}
}

// parseTest reads one positive unary test. full admits whole expressions
// (decision-table cells such as `? > 5 and ? < 10`); after `in`, a test
// stops before comparison operators.
func (p *parser) parseTest(full bool) (*utest, error) {
	t := p.peek()
	if t.kind == tOp {
		switch t.text {
		case "<", "<=", ">", ">=", "=", "!=":
			p.advance()
			x, err := p.parseAdd()
			if err != nil {
				return nil, err
			}
			return &utest{op: t.text, x: x}, nil
		}
	}
	var x node
	var err error
	if full {
		x, err = p.parseExpr()
	} else {
		x, err = p.parseAdd()
	}
	if err != nil {
		return nil, err
	}
	return &utest{x: x, usesQ: usesQ(x)}, nil
}

// parseType reads a type for `instance of` and typed parameters.
func (p *parser) parseType() (*ftype, error) {
	t := p.peek()
	if t.kind != tName {
		return nil, p.errAt(t, "unexpected %s, want a type", describe(t))
	}
	if nx := p.peekN(1); nx.kind == tOp && nx.text == "<" {
		switch t.text {
		case "list", "range":
			p.advance()
			p.advance()
			el, err := p.parseType()
			if err != nil {
				return nil, err
			}
			if _, err := p.expectOp(">"); err != nil {
				return nil, err
			}
			return &ftype{name: t.text, elem: el}, nil
		case "context":
			p.advance()
			p.advance()
			ty := &ftype{name: "context"}
			for !p.isOp(">") {
				var words []string
				for p.peek().kind == tName {
					words = append(words, p.advance().text)
				}
				if len(words) == 0 {
					return nil, p.errAt(p.peek(), "unexpected %s, want a context key", describe(p.peek()))
				}
				if _, err := p.expectOp(":"); err != nil {
					return nil, err
				}
				ft, err := p.parseType()
				if err != nil {
					return nil, err
				}
				ty.keys = append(ty.keys, strings.Join(words, " "))
				ty.fields = append(ty.fields, ft)
				if p.isOp(",") {
					p.advance()
				} else if !p.isOp(">") {
					return nil, p.errAt(p.peek(), "unexpected %s, want \",\" or \">\"", describe(p.peek()))
				}
			}
			p.advance()
			return ty, nil
		case "function":
			p.advance()
			p.advance()
			ty := &ftype{name: "function"}
			for !p.isOp(">") {
				pt, err := p.parseType()
				if err != nil {
					return nil, err
				}
				ty.fields = append(ty.fields, pt)
				if p.isOp(",") {
					p.advance()
				} else if !p.isOp(">") {
					return nil, p.errAt(p.peek(), "unexpected %s, want \",\" or \">\"", describe(p.peek()))
				}
			}
			p.advance()
			if _, err := p.expectOp("->"); err != nil {
				return nil, err
			}
			rt, err := p.parseType()
			if err != nil {
				return nil, err
			}
			ty.elem = rt
			return ty, nil
		}
	}
	n, _ := p.name()
	return &ftype{name: n}, nil
}
