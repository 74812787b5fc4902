// Package feel is an interpreter for FEEL, the expression language of DMN
// 1.5 that Camunda and Zeebe use for conditions, input/output mappings and
// timer expressions.
//
// Parse an expression once, then evaluate it many times:
//
//	x, err := feel.Parse(`amount > 1000 and status in ["new", "open"]`)
//	v, err := x.Eval(map[string]any{"amount": 1500, "status": "new"}) // true
//
// Values are Go values: nil (null), bool, string, Number (a 34-digit
// decimal), []any (list), *Context (context; map[string]any is accepted as
// input), *Range, *Function, and the temporal types Date, Time, DateTime,
// DaysTime and YearsMonths. Input numbers may be any Go integer or float,
// json.Number or Number; time.Time and time.Duration are accepted too.
//
// As the specification requires, evaluation never fails on bad data: a
// type mismatch, a missing variable or a failed built-in gives null. Eval
// returns an error only when an evaluation exceeds its limits (MaxSteps,
// MaxCallDepth). Parse errors carry the line and column.
//
// The package imports only the standard library, so plugin authors can use
// it from WebAssembly builds; zone rules are embedded (time/tzdata). It
// holds no global mutable state apart from caches, and an *Expr may be
// evaluated from many goroutines at once.
package feel

import (
	"fmt"
	"sync"
	"time"
)

// Expr is a parsed FEEL expression.
type Expr struct {
	src  string
	root node
}

// Parse parses a FEEL expression. Errors are *SyntaxError values whose
// text starts with the line and column: `1:7: unexpected ")"`.
func Parse(src string, opts ...Option) (*Expr, error) {
	p := newParser(nil, opts)
	toks, err := lex(src, p.special...)
	if err != nil {
		return nil, err
	}
	p.toks = toks
	if p.peek().kind == tEOF {
		return nil, p.errAt(p.peek(), "empty expression")
	}
	n, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, p.unexpected(t)
	}
	return &Expr{src: src, root: n}, nil
}

// MustParse is Parse for expressions known to be valid; it panics on error.
func MustParse(src string, opts ...Option) *Expr {
	x, err := Parse(src, opts...)
	if err != nil {
		panic(fmt.Sprintf("feel: parse %q: %v", src, err))
	}
	return x
}

// String returns the source text.
func (x *Expr) String() string { return x.src }

// Eval evaluates the expression with the given variables.
func (x *Expr) Eval(vars map[string]any) (any, error) {
	if vars == nil {
		vars = noVars
	}
	e := envPool.Get().(*env)
	*e = env{vars: vars}
	v, err := e.run(x.root, nil)
	*e = env{}
	envPool.Put(e)
	return v, err
}

// envPool recycles evaluation states: a condition evaluated per token
// should not cost an allocation for its bookkeeping.
var envPool = sync.Pool{New: func() any { return new(env) }}

// noVars stands for a nil map: env reads vars from a map when one is set.
var noVars = map[string]any{}

// EvalScope evaluates the expression, reading variables from s.
func (x *Expr) EvalScope(s Scope) (any, error) {
	e := envPool.Get().(*env)
	*e = env{root: s}
	v, err := e.run(x.root, nil)
	*e = env{}
	envPool.Put(e)
	return v, err
}

// EvalScopeAt is EvalScope with a fixed clock: today() and now() read at
// instead of the wall clock (a zero at means the wall clock).
func (x *Expr) EvalScopeAt(s Scope, at time.Time) (any, error) {
	e := envPool.Get().(*env)
	*e = env{root: s, now: at}
	v, err := e.run(x.root, nil)
	*e = env{}
	envPool.Put(e)
	return v, err
}

// EvalAt is Eval with a fixed clock: today() and now() read at instead of
// the wall clock, for deterministic runs and replays.
func (x *Expr) EvalAt(vars map[string]any, at time.Time) (any, error) {
	if vars == nil {
		vars = noVars
	}
	e := env{vars: vars, now: at}
	return e.run(x.root, nil)
}

func (e *env) run(n node, f *frame) (any, error) {
	return e.guard(func() any { return n.eval(e, f) })
}

// guard turns a limit panic into ErrLimit, and any other panic (a bug)
// into an error rather than a crash of the host.
func (e *env) guard(fn func() any) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			if lp, ok := r.(limitPanic); ok {
				v, err = nil, fmt.Errorf("%w: %s", ErrLimit, lp.msg)
				return
			}
			if ce, ok := r.(callError); ok {
				v, err = nil, ce.err
				return
			}
			v, err = nil, fmt.Errorf("feel: internal error: %v", r)
		}
	}()
	return fn(), nil
}

// UnaryTests is a parsed list of unary tests, the text of a decision-table
// input entry: `< 10`, `[1..5], > 100`, `"a", "b"`, `not(3)`, `-`.
type UnaryTests struct {
	src    string
	any    bool // "-": matches everything
	negate bool
	tests  []*utest
}

// ParseUnaryTests parses unary tests.
func ParseUnaryTests(src string, opts ...Option) (*UnaryTests, error) {
	p := newParser(nil, opts)
	toks, err := lex(src, p.special...)
	if err != nil {
		return nil, err
	}
	p.toks = toks
	u := &UnaryTests{src: src}
	if p.peek().kind == tEOF {
		return nil, p.errAt(p.peek(), "empty unary tests")
	}
	if p.isOp("-") && p.peekN(1).kind == tEOF {
		u.any = true
		return u, nil
	}
	closeNot := false
	if p.isWord("not") && p.peekN(1).kind == tOp && p.peekN(1).text == "(" {
		// not(...) negates the tests inside, unless it is a call in a
		// larger expression such as not(x) = true.
		save := p.i
		p.advance()
		p.advance()
		tests, err := p.parseTests()
		if err == nil && p.isOp(")") && p.peekN(1).kind == tEOF {
			p.advance()
			u.negate, u.tests, closeNot = true, tests, true
		} else {
			p.i = save
		}
	}
	if !closeNot {
		tests, err := p.parseTests()
		if err != nil {
			return nil, err
		}
		u.tests = tests
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, p.unexpected(t)
	}
	return u, nil
}

func (p *parser) parseTests() ([]*utest, error) {
	var tests []*utest
	for {
		t, err := p.parseTest(true)
		if err != nil {
			return nil, err
		}
		tests = append(tests, t)
		if !p.isOp(",") {
			return tests, nil
		}
		p.advance()
	}
}

// String returns the source text.
func (u *UnaryTests) String() string { return u.src }

// Match evaluates the tests against input: true when one test is
// satisfied (none, for not(...)); null when that cannot be decided.
func (u *UnaryTests) Match(input any, vars map[string]any) (any, error) {
	if u.any {
		return true, nil
	}
	if vars == nil {
		vars = noVars
	}
	e := env{vars: vars}
	in := norm(input)
	v, err := e.guard(func() any { return matchAny(&e, nil, u.tests, in) })
	if err != nil {
		return nil, err
	}
	if u.negate {
		if b, ok := v.(bool); ok {
			return !b, nil
		}
	}
	return v, nil
}

// Bool reports whether v is the boolean true: what a condition needs.
// Null and non-booleans are not true.
func Bool(v any) bool { return v == true }
