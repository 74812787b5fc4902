package dmn

import (
	"context"
	"fmt"
	"time"

	"github.com/sextant-dev/sextant/navigators/feel"
)

// Evaluate evaluates the decision (or decision service) called name,
// by name or id, with inputs giving the input data by name, and returns
// its value as a FEEL value (see package feel): feel.Number, string,
// bool, *feel.Context, []any, the temporal types, or nil.
//
// Input values may be Go or JSON values: numbers of any Go type or
// json.Number, maps and slices; a string is read as a date, time or
// duration where the input's declared type says so. An input left out is
// null. The decisions it requires are evaluated first, once each.
//
// Errors are *EvalError values wrapping ErrNoDecision, ErrType (an input
// that does not conform to its declared type), ErrHitPolicy, ErrValue,
// feel.ErrLimit or the context's error.
func (m *Model) Evaluate(ctx context.Context, name string, inputs map[string]any) (any, error) {
	return m.EvaluateAt(ctx, name, inputs, time.Time{})
}

// EvaluateAt is Evaluate with a fixed clock: today() and now() read at (a
// zero at reads the wall clock once).
func (m *Model) EvaluateAt(ctx context.Context, name string, inputs map[string]any, at time.Time) (any, error) {
	return m.evaluate(ctx, name, inputs, at, false)
}

// EvaluateVars is EvaluateAt as a process engine calls a decision (a
// Zeebe business rule task): vars are every variable the caller sees, and
// each decision sees them by name behind the names its requirements bring,
// so an input expression may read a variable the model declares no input
// data for, as Camunda's engine lets it. Input data take their values
// from vars as from EvaluateAt's inputs.
func (m *Model) EvaluateVars(ctx context.Context, name string, vars map[string]any, at time.Time) (any, error) {
	return m.evaluate(ctx, name, vars, at, true)
}

// Has reports whether the model has a decision or decision service called
// name, by name or id.
func (m *Model) Has(name string) bool {
	_, ok := m.byName[name]
	return ok
}

func (m *Model) evaluate(ctx context.Context, name string, inputs map[string]any, at time.Time, open bool) (any, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	v, ok := m.byName[name]
	if !ok {
		return nil, &EvalError{File: m.file, Err: fmt.Errorf("%w: %q (the model has %s)", ErrNoDecision, name, m.list())}
	}
	s := feel.NewSession(at)
	switch x := v.(type) {
	case *decision:
		r := m.newRun(ctx, s, inputs)
		if open {
			r.open = varScope(inputs)
		}
		return r.decide(x)
	case *service:
		return m.evalService(ctx, s, x, inputs, false, open)
	}
	return nil, nil
}

func (m *Model) list() string {
	if len(m.decisions) == 0 {
		return "no decisions"
	}
	s := ""
	for i, d := range m.decisions {
		if i > 0 {
			s += ", "
		}
		if i == 8 {
			return s + fmt.Sprintf("and %d more", len(m.decisions)-8)
		}
		s += fmt.Sprintf("%q", d.name)
	}
	return s
}

// run is one evaluation of a model: the values of the decisions and
// inputs computed so far.
type run struct {
	m      *Model
	ctx    context.Context
	s      *feel.Session
	inputs map[string]any
	dec    []slot
	in     []slot
	// fixed holds the values given for a decision service's input
	// decisions.
	fixed map[*decision]any
	// lenient: inputs are arguments of an invocation, and one that does
	// not conform to its type is null rather than an error.
	lenient bool
	// open, when set, is every variable of the caller (EvaluateVars):
	// decisions see them behind their requirements.
	open feel.Scope
}

// varScope is a caller's variables as FEEL names (EvaluateVars).
type varScope map[string]any

// Lookup implements feel.Scope.
func (v varScope) Lookup(name string) (any, bool) {
	x, ok := v[name]
	if !ok {
		return nil, false
	}
	return feel.Value(x), true
}

type slot struct {
	v     any
	state uint8 // 0 not yet, 1 done
}

func (m *Model) newRun(ctx context.Context, s *feel.Session, inputs map[string]any) *run {
	return &run{m: m, ctx: ctx, s: s, inputs: inputs, dec: make([]slot, len(m.decisions)), in: make([]slot, len(m.inputs))}
}

func (r *run) input(in *inputData) (any, error) {
	sl := &r.in[in.idx]
	if sl.state == 1 {
		return sl.v, nil
	}
	v := r.inputs[in.name]
	if in.typ != nil {
		v = fromJSON(r.s, v, in.typ)
		if !conforms(r.s, v, in.typ) {
			if r.lenient {
				v = nil
				sl.v, sl.state = v, 1
				return v, nil
			}
			return nil, &EvalError{File: r.m.file, Line: in.line, Element: fmt.Sprintf("inputData %q", in.name),
				Err: fmt.Errorf("%w: %s is not a %s", ErrType, feel.Format(v), typeName(in.typ))}
		}
	} else {
		v = feel.Value(v)
	}
	sl.v, sl.state = v, 1
	return v, nil
}

func typeName(t *typ) string {
	if t.name != "" {
		return t.name
	}
	if t.kind == kList && t.elem != nil {
		return "list of " + typeName(t.elem)
	}
	return "value of its type"
}

func (r *run) decide(d *decision) (any, error) {
	if v, ok := r.fixed[d]; ok {
		return v, nil
	}
	sl := &r.dec[d.idx]
	if sl.state == 1 {
		return sl.v, nil
	}
	if r.ctx != nil {
		if err := r.ctx.Err(); err != nil {
			return nil, err
		}
	}
	if d.broken != nil {
		return nil, d.broken
	}
	vals := make([]any, len(d.names))
	i := 0
	for _, in := range d.reqIn {
		v, err := r.input(in)
		if err != nil {
			return nil, err
		}
		vals[i] = v
		i++
	}
	for _, rd := range d.reqDec {
		v, err := r.decide(rd)
		if err != nil {
			return nil, err
		}
		vals[i] = v
		i++
	}
	for _, k := range d.reqKnow {
		vals[i] = k.function()
		i++
	}
	var v any
	if d.expr != nil {
		var err error
		v, err = d.expr.eval(r.s, &scope{parent: r.open, names: d.names, vals: vals})
		if err != nil {
			return nil, decisionErr(r.m.file, d, err)
		}
	}
	if d.typ != nil {
		// A value that does not conform to the decision's type is null,
		// as DMN says (after its singleton-list conversions).
		v, _ = coerce(r.s, v, d.typ)
	}
	sl.v, sl.state = v, 1
	return v, nil
}

func decisionErr(file string, d *decision, err error) error {
	if _, ok := err.(*EvalError); ok {
		return err
	}
	return &EvalError{File: file, Line: d.line, Element: fmt.Sprintf("decision %q", d.name), Err: err}
}

// evalService evaluates a decision service: its input decisions take
// their values from inputs (by name) instead of being evaluated, its
// output decisions are evaluated, and the result is the one output's
// value or a context of them. called says a FEEL invocation passed the
// inputs: then they are arguments, not checked as model inputs.
func (m *Model) evalService(ctx context.Context, s *feel.Session, svc *service, inputs map[string]any, called, open bool) (any, error) {
	r := m.newRun(ctx, s, inputs)
	r.lenient = called
	if open {
		r.open = varScope(inputs)
	}
	r.fixed = make(map[*decision]any, len(svc.inDec))
	for _, d := range svc.inDec {
		v := inputs[d.name]
		if d.typ != nil {
			v, _ = coerce(s, fromJSON(s, v, d.typ), d.typ)
		} else {
			v = feel.Value(v)
		}
		r.fixed[d] = v
	}
	if len(svc.outputs) == 1 {
		return r.decide(svc.outputs[0])
	}
	out := feel.NewContext()
	for _, d := range svc.outputs {
		v, err := r.decide(d)
		if err != nil {
			return nil, err
		}
		out.Put(d.name, v)
	}
	return out, nil
}
