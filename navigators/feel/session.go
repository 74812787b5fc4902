package feel

import (
	"fmt"
	"time"
)

// Session is one evaluation spread over several expressions, such as the
// decisions of a DMN model and the knowledge models they invoke. Its
// expressions share one step budget (MaxSteps), one call depth
// (MaxCallDepth) and one clock, so an evaluation that nests expressions
// through Go functions (NewFunction) is bounded as a single one would be.
// A Session is not safe for concurrent use.
type Session struct {
	now   time.Time
	steps int
	depth int
}

// NewSession returns a session whose today() and now() read at; a zero at
// reads the wall clock once, so every expression of the session agrees.
func NewSession(at time.Time) *Session {
	if at.IsZero() {
		at = time.Now()
	}
	return &Session{now: at}
}

// Now is the session's clock.
func (s *Session) Now() time.Time { return s.now }

// Eval evaluates x, reading variables from sc, within the session's limits.
func (s *Session) Eval(x *Expr, sc Scope) (any, error) {
	return s.run(sc, func(e *env) any { return x.root.eval(e, nil) })
}

// Match evaluates the unary tests u against input, with the variables of
// sc in scope: true when one test is satisfied (none, for not(...)), null
// when that cannot be decided.
func (s *Session) Match(u *UnaryTests, input any, sc Scope) (any, error) {
	if u.any {
		return true, nil
	}
	in := norm(input)
	v, err := s.run(sc, func(e *env) any { return matchAny(e, nil, u.tests, in) })
	if err != nil {
		return nil, err
	}
	if b, ok := v.(bool); ok && u.negate {
		return !b, nil
	}
	return v, nil
}

func (s *Session) run(sc Scope, fn func(*env) any) (any, error) {
	e := envPool.Get().(*env)
	*e = env{root: sc, now: s.now, steps: s.steps, depth: s.depth, sess: s}
	if sc == nil {
		e.vars = noVars
	}
	v, err := e.guard(func() any { return fn(e) })
	s.steps = e.steps
	*e = env{}
	envPool.Put(e)
	return v, err
}

// MatchRows matches the rows of a decision table: row i matches when each
// of its tests is true for the input at the same position (a nil test,
// the table's "-", matches anything). visit is called with each matching
// row in order and returns whether to go on. It is Match for every
// entry, in one evaluation rather than one per entry.
func (s *Session) MatchRows(rows [][]*UnaryTests, inputs []any, sc Scope, visit func(row int) bool) error {
	_, err := s.run(sc, func(e *env) any {
		for i, row := range rows {
			if matchRow(e, row, inputs) && !visit(i) {
				break
			}
		}
		return nil
	})
	return err
}

func matchRow(e *env, row []*UnaryTests, inputs []any) bool {
	for j, u := range row {
		if u == nil || u.any {
			continue
		}
		v := matchAny(e, nil, u.tests, norm(inputs[j]))
		if b, ok := v.(bool); ok && u.negate {
			v = !b
		}
		if v != true {
			return false
		}
	}
	return true
}

// callError carries the error of a Go function (NewFunction) up to the
// Eval that called it.
type callError struct{ err error }

// NewFunction returns a FEEL function value implemented in Go, for hosts
// that give expressions functions of their own (a DMN business knowledge
// model, a decision service). FEEL calls it with positional or named
// arguments (a parameter left out of a named call is null); a call with
// the wrong number of arguments is null, as for any FEEL function. fn runs
// within the session of the evaluation that calls it, so the expressions
// it evaluates share that evaluation's limits; an error it returns stops
// the calling evaluation and is returned by its Eval.
func NewFunction(name string, params []string, fn func(s *Session, args []any) (any, error)) *Function {
	ps := append([]string(nil), params...)
	bi := &builtin{name: name, sigs: [][]string{ps}}
	bi.fn = func(e *env, args []any) any {
		s := e.sess
		if s == nil {
			s = &Session{now: e.clock()}
		}
		saved := s.depth
		s.steps, s.depth = e.steps, e.depth+1
		if s.depth > MaxCallDepth {
			panic(limitPanic{fmt.Sprintf("calls nested deeper than %d", MaxCallDepth)})
		}
		v, err := fn(s, args)
		e.steps, s.depth = s.steps, saved
		if err != nil {
			panic(callError{err})
		}
		return norm(v)
	}
	return &Function{name: name, params: ps, bi: bi}
}

// Params returns the parameter names of a function defined in FEEL or
// made by NewFunction (nil for a built-in). The slice must not be
// modified.
func (f *Function) Params() []string {
	if f.bi != nil && len(f.bi.sigs) != 1 {
		return nil
	}
	return f.params
}

// Call invokes a function value with positional arguments within the
// session: how a host applies a function that an expression returned.
func (s *Session) Call(fn *Function, args []any) (any, error) {
	if fn == nil {
		return nil, nil
	}
	return s.run(nil, func(e *env) any {
		for i := range args {
			args[i] = norm(args[i])
		}
		return e.call(fn, args)
	})
}

// Value returns the FEEL value a Go value stands for, as Eval reads a
// variable: Go integers and floats and json.Number become Number,
// time.Time a DateTime, time.Duration a DaysTime, other slices and
// string-keyed maps []any and map[string]any (whose elements are read the
// same way when used). A value FEEL has no type for is null.
func Value(v any) any { return norm(v) }
