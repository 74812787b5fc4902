package feel

import (
	"errors"
	"fmt"
	"time"
)

// Scope supplies the values of the variables an expression reads.
type Scope interface {
	// Lookup returns the value of name and whether it is defined.
	Lookup(name string) (any, bool)
}

// Vars is a Scope over a Go map.
type Vars map[string]any

// Lookup implements Scope.
func (v Vars) Lookup(name string) (any, bool) {
	x, ok := v[name]
	return x, ok
}

// Limits bound the work one evaluation may do.
const (
	// MaxSteps bounds the iterations (list elements built, loop and filter
	// rounds, function calls) of one evaluation.
	MaxSteps = 2_000_000
	// MaxCallDepth bounds nested calls of functions defined in FEEL.
	MaxCallDepth = 500
	// MaxString bounds the strings an evaluation builds, in bytes; a longer
	// result is null.
	MaxString = 16 << 20
)

// ErrLimit reports an evaluation stopped by MaxSteps or MaxCallDepth.
var ErrLimit = errors.New("feel: evaluation limit exceeded")

type limitPanic struct{ msg string }

// env is the state of one evaluation.
type env struct {
	root  Scope
	vars  map[string]any // root as a map, for the fast path
	steps int
	depth int
	now   time.Time
	sess  *Session // the session evaluating, for Go functions (NewFunction)
}

func (e *env) step(n int) {
	e.steps += n
	if e.steps > MaxSteps {
		panic(limitPanic{fmt.Sprintf("more than %d steps", MaxSteps)})
	}
}

func (e *env) clock() time.Time {
	if e.now.IsZero() {
		e.now = time.Now()
	}
	return e.now
}

// frame is one level of local names: loop variables, parameters, `item`,
// or the entries of a context being built or filtered.
type frame struct {
	parent *frame
	name   string
	val    any
	names  []string // more bindings (function parameters, for iterators)
	vals   []any
	ctx    any // a context whose keys are in scope (filters, context literals)
}

func (f *frame) lookup(name string) (any, bool) {
	for ; f != nil; f = f.parent {
		if f.name == name && f.name != "" {
			return f.val, true
		}
		for i, n := range f.names {
			if n == name {
				return f.vals[i], true
			}
		}
		if f.ctx != nil {
			if v, ok := ctxGet(f.ctx, name); ok {
				return v, true
			}
		}
	}
	return nil, false
}

func (e *env) lookup(f *frame, name string) (any, bool) {
	if v, ok := f.lookup(name); ok {
		return v, true
	}
	if e.vars != nil {
		if v, ok := e.vars[name]; ok {
			return norm(v), true
		}
	} else if e.root != nil {
		if v, ok := e.root.Lookup(name); ok {
			return norm(v), true
		}
	}
	return nil, false
}

// node is a parsed expression.
type node interface {
	eval(e *env, f *frame) any
}

type litNode struct{ v any }

func (n *litNode) eval(*env, *frame) any { return n.v }

type refNode struct {
	name string
	pos  Pos
}

func (n *refNode) eval(e *env, f *frame) any {
	if v, ok := e.lookup(f, n.name); ok {
		return v
	}
	if bi := builtins[n.name]; bi != nil {
		return &Function{bi: bi, name: n.name}
	}
	return nil
}

type negNode struct{ x node }

func (n *negNode) eval(e *env, f *frame) any {
	switch v := n.x.eval(e, f).(type) {
	case Number:
		return v.Neg()
	case DaysTime:
		return v.neg()
	case YearsMonths:
		return YearsMonths{-v.months}
	}
	return nil
}

type arithNode struct {
	op   byte // + - * / ^
	l, r node
}

func (n *arithNode) eval(e *env, f *frame) any {
	return arith(n.op, n.l.eval(e, f), n.r.eval(e, f))
}

type andNode struct{ l, r node }

func (n *andNode) eval(e *env, f *frame) any {
	l := n.l.eval(e, f)
	if l == false {
		return false
	}
	r := n.r.eval(e, f)
	if r == false {
		return false
	}
	if l == true && r == true {
		return true
	}
	return nil
}

type orNode struct{ l, r node }

func (n *orNode) eval(e *env, f *frame) any {
	l := n.l.eval(e, f)
	if l == true {
		return true
	}
	r := n.r.eval(e, f)
	if r == true {
		return true
	}
	if l == false && r == false {
		return false
	}
	return nil
}

type cmpNode struct {
	op   string
	l, r node
}

func (n *cmpNode) eval(e *env, f *frame) any {
	// Fast path for the commonest condition, `name < 1000`: compare the
	// variable's number unboxed.
	if r, ok := n.l.(*refNode); ok {
		if lit, ok := n.r.(*litNode); ok {
			if b, ok := lit.v.(Number); ok {
				if v, ok := e.lookupNoBox(f, r.name); ok {
					c := v.Cmp(b)
					switch n.op {
					case "=":
						return c == 0
					case "!=":
						return c != 0
					case "<":
						return c < 0
					case "<=":
						return c <= 0
					case ">":
						return c > 0
					case ">=":
						return c >= 0
					}
				}
			}
		}
	}
	return compareOp(n.op, n.l.eval(e, f), n.r.eval(e, f))
}

// lookupNoBox returns a top-level variable holding a Go integer or a
// number as a Number without boxing it; false for anything else.
func (e *env) lookupNoBox(f *frame, name string) (Number, bool) {
	if f != nil || e.vars == nil {
		return Number{}, false
	}
	switch x := e.vars[name].(type) {
	case int:
		return Number{c: int64(x)}, true
	case int64:
		return Number{c: x}, true
	case Number:
		return x, true
	}
	return Number{}, false
}

// compareOp applies = != < <= > >= with FEEL's null rules.
func compareOp(op string, l, r any) any {
	switch op {
	case "=":
		return equal(l, r)
	case "!=":
		if b, ok := equal(l, r).(bool); ok {
			return !b
		}
		return nil
	}
	c, ok := compare(l, r)
	if !ok {
		return nil
	}
	switch op {
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	case ">=":
		return c >= 0
	}
	return nil
}

type betweenNode struct{ x, lo, hi node }

func (n *betweenNode) eval(e *env, f *frame) any {
	x := n.x.eval(e, f)
	a, ok1 := compare(x, n.lo.eval(e, f))
	b, ok2 := compare(x, n.hi.eval(e, f))
	if !ok1 || !ok2 {
		return nil
	}
	return a >= 0 && b <= 0
}

type inNode struct {
	x     node
	tests []*utest
}

func (n *inNode) eval(e *env, f *frame) any {
	x := n.x.eval(e, f)
	return matchAny(e, f, n.tests, x)
}

// matchAny is true when one test matches, null when none matches and one
// could not be decided, else false.
func matchAny(e *env, f *frame, tests []*utest, x any) any {
	var unknown bool
	for _, t := range tests {
		switch t.match(e, f, x) {
		case true:
			return true
		case nil:
			unknown = true
		}
	}
	if unknown {
		return nil
	}
	return false
}

type instanceNode struct {
	x node
	t *ftype
}

func (n *instanceNode) eval(e *env, f *frame) any { return n.t.matches(n.x.eval(e, f)) }

type ifNode struct{ c, a, b node }

func (n *ifNode) eval(e *env, f *frame) any {
	if n.c.eval(e, f) == true {
		return n.a.eval(e, f)
	}
	return n.b.eval(e, f)
}

type listNode struct{ elems []node }

func (n *listNode) eval(e *env, f *frame) any {
	e.step(len(n.elems))
	l := make([]any, len(n.elems))
	for i, x := range n.elems {
		l[i] = x.eval(e, f)
	}
	return l
}

// constListNode is a list of literals, built once; each evaluation hands
// out a copy so that callers may keep and change what Eval returns.
type constListNode struct{ v []any }

func (n *constListNode) eval(e *env, _ *frame) any {
	e.step(len(n.v))
	return append(make([]any, 0, len(n.v)), n.v...)
}

type contextNode struct {
	keys []string
	vals []node
}

func (n *contextNode) eval(e *env, f *frame) any {
	c := &Context{keys: make([]string, 0, len(n.keys)), vals: make([]any, 0, len(n.keys))}
	inner := &frame{parent: f, ctx: c}
	for i, k := range n.keys {
		c.Put(k, n.vals[i].eval(e, inner))
	}
	return c
}

type rangeNode struct {
	lo, hi             node
	loClosed, hiClosed bool
}

func (n *rangeNode) eval(e *env, f *frame) any {
	lo, hi := n.lo.eval(e, f), n.hi.eval(e, f)
	if lo != nil && hi != nil {
		if _, ok := compare(lo, hi); !ok {
			return nil
		}
	} else if lo == nil && hi == nil {
		return nil
	} else if !orderable(lo) || !orderable(hi) {
		return nil
	}
	return &Range{Start: lo, End: hi, StartClosed: n.loClosed, EndClosed: n.hiClosed}
}

func orderable(v any) bool {
	switch v.(type) {
	case nil, Number, string, Date, Time, DateTime, DaysTime, YearsMonths:
		return true
	}
	return false
}

// cmpRangeNode is a comparison used as a value: `< 10`, `(>= 5)`.
type cmpRangeNode struct {
	op string
	x  node
}

func (n *cmpRangeNode) eval(e *env, f *frame) any {
	v := n.x.eval(e, f)
	switch n.op {
	case "<", "<=":
		return &Range{End: v, EndClosed: n.op == "<=", Op: n.op}
	case ">", ">=":
		return &Range{Start: v, StartClosed: n.op == ">=", Op: n.op}
	}
	return &Range{Start: v, End: v, StartClosed: true, EndClosed: true, Op: n.op}
}

type pathNode struct {
	x    node
	name string
}

func (n *pathNode) eval(e *env, f *frame) any {
	x := n.x.eval(e, f)
	if l, ok := x.([]any); ok {
		out := make([]any, len(l))
		e.step(len(l))
		for i, el := range l {
			out[i] = property(norm(el), n.name)
		}
		return out
	}
	return property(x, n.name)
}

type filterNode struct{ x, f node }

func (n *filterNode) eval(e *env, f *frame) any {
	x := n.x.eval(e, f)
	if x == nil {
		return nil
	}
	l, _ := asList(x)
	if lit, ok := n.f.(*litNode); ok {
		if num, ok := lit.v.(Number); ok {
			return index(l, num)
		}
	}
	if len(l) == 0 {
		return []any{}
	}
	out := make([]any, 0, len(l))
	for i, el := range l {
		e.step(1)
		el = norm(el)
		inner := &frame{parent: f, name: "item", val: el}
		if isContext(el) {
			inner.ctx = el
		}
		r := n.f.eval(e, inner)
		if i == 0 {
			if num, ok := r.(Number); ok {
				return index(l, num)
			}
		}
		if r == true {
			out = append(out, el)
		}
	}
	return out
}

func index(l []any, n Number) any {
	i, ok := n.Int64()
	if !ok {
		return nil
	}
	switch {
	case i > 0 && i <= int64(len(l)):
		return norm(l[i-1])
	case i < 0 && -i <= int64(len(l)):
		return norm(l[int64(len(l))+i])
	}
	return nil
}

type iter struct {
	name   string
	in, to node
}

// domain evaluates an iteration domain: a list, or a range of integers.
func (it iter) domain(e *env, f *frame) ([]any, bool) {
	v := it.in.eval(e, f)
	if it.to != nil {
		return intRange(e, v, it.to.eval(e, f))
	}
	if r, ok := v.(*Range); ok && r.Op == "" {
		lo, hi := r.Start, r.End
		l, ok := intRange(e, lo, hi)
		if !ok {
			return nil, false
		}
		if !r.StartClosed && len(l) > 0 {
			l = l[1:]
		}
		if !r.EndClosed && len(l) > 0 {
			l = l[:len(l)-1]
		}
		return l, true
	}
	if v == nil {
		return nil, false
	}
	l, _ := asList(v)
	return l, true
}

func intRange(e *env, lo, hi any) ([]any, bool) {
	if da, ok := lo.(Date); ok {
		return dateRange(e, da, hi)
	}
	a, ok1 := lo.(Number)
	b, ok2 := hi.(Number)
	if !ok1 || !ok2 || !a.IsInt() || !b.IsInt() {
		return nil, false
	}
	x, ok1 := a.Int64()
	y, ok2 := b.Int64()
	if !ok1 || !ok2 {
		return nil, false
	}
	n := y - x
	if n < 0 {
		n = -n
	}
	if n >= MaxSteps {
		panic(limitPanic{fmt.Sprintf("range of %d numbers", n+1)})
	}
	e.step(int(n + 1))
	out := make([]any, 0, n+1)
	if x <= y {
		for i := x; i <= y; i++ {
			out = append(out, NewNumber(i))
		}
	} else {
		for i := x; i >= y; i-- {
			out = append(out, NewNumber(i))
		}
	}
	return out, true
}

// dateRange lists the days from a to hi (a Date), either way (DMN 1.5).
func dateRange(e *env, a Date, hi any) ([]any, bool) {
	b, ok := hi.(Date)
	if !ok {
		return nil, false
	}
	ta, tb := a.utc(), b.utc()
	days := (tb.Unix() - ta.Unix()) / 86400
	n := days
	if n < 0 {
		n = -n
	}
	if n >= MaxSteps {
		panic(limitPanic{fmt.Sprintf("range of %d days", n+1)})
	}
	e.step(int(n + 1))
	out := make([]any, 0, n+1)
	dir := 1
	if days < 0 {
		dir = -1
	}
	for i := int64(0); i <= n; i++ {
		out = append(out, dateOf(ta.AddDate(0, 0, dir*int(i))))
	}
	return out, true
}

type forNode struct {
	iters   []iter
	body    node
	partial bool // the body reads `partial`, the results so far
}

func (n *forNode) eval(e *env, f *frame) any {
	out := []any{}
	if n.partial {
		f = &frame{parent: f, name: "partial", val: []any{}}
	}
	if !n.loop(e, f, 0, &out) {
		return nil
	}
	return out
}

func (n *forNode) loop(e *env, f *frame, k int, out *[]any) bool {
	if k == len(n.iters) {
		v := n.body.eval(e, f)
		*out = append(*out, v)
		return true
	}
	it := n.iters[k]
	dom, ok := it.domain(e, f)
	if !ok {
		return false
	}
	for _, x := range dom {
		e.step(1)
		inner := &frame{parent: f, name: it.name, val: norm(x)}
		if n.partial {
			// partial sees the results so far.
			e.step(len(*out))
			root := inner
			for root.name != "partial" {
				root = root.parent
			}
			root.val = append([]any(nil), *out...)
		}
		if !n.loop(e, inner, k+1, out) {
			return false
		}
	}
	return true
}

type quantNode struct {
	every bool
	iters []iter
	body  node
}

func (n *quantNode) eval(e *env, f *frame) any {
	res, _ := n.loop(e, f, 0)
	return res
}

// loop returns the verdict, and whether it was decided early.
func (n *quantNode) loop(e *env, f *frame, k int) (any, bool) {
	if k == len(n.iters) {
		v := n.body.eval(e, f)
		if n.every {
			return v, v != true
		}
		return v, v == true
	}
	it := n.iters[k]
	dom, ok := it.domain(e, f)
	if !ok {
		return nil, true
	}
	var unknown bool
	for _, x := range dom {
		e.step(1)
		v, done := n.loop(e, &frame{parent: f, name: it.name, val: norm(x)}, k+1)
		if done {
			if n.every && v == false || !n.every && v == true {
				return v, true
			}
		}
		if v != true && v != false {
			unknown = true
		}
	}
	if unknown {
		return nil, false
	}
	return n.every, false
}

type funcNode struct {
	params []string
	types  []*ftype // declared parameter types; nil where none is given
	body   node
}

func (n *funcNode) eval(e *env, f *frame) any {
	return &Function{params: n.params, types: n.types, body: n.body, closure: f}
}

type callNode struct {
	fn    node
	bi    *builtin // the built-in the name refers to, unless shadowed
	args  []node
	names []string // parameter names of named arguments
	pos   Pos
}

func (n *callNode) eval(e *env, f *frame) any {
	var fn *Function
	if n.bi != nil {
		// A function of the same name shadows the built-in; any other
		// value does not (variables and functions are apart, as in
		// Camunda's FEEL: a variable called count leaves count() alone).
		v, _ := e.lookup(f, n.fn.(*refNode).name)
		if fn, _ = v.(*Function); fn == nil {
			return n.callBuiltin(e, f, n.bi)
		}
	} else {
		fn, _ = n.fn.eval(e, f).(*Function)
	}
	if fn == nil {
		return nil
	}
	if fn.bi != nil {
		return n.callBuiltin(e, f, fn.bi)
	}
	args := make([]any, len(fn.params))
	if n.names != nil {
		for i, name := range n.names {
			k := indexOf(fn.params, name)
			if k < 0 {
				return nil
			}
			args[k] = n.args[i].eval(e, f)
		}
	} else {
		if len(n.args) != len(fn.params) {
			return nil
		}
		for i, a := range n.args {
			args[i] = a.eval(e, f)
		}
	}
	return e.callUser(fn, args)
}

func indexOf(l []string, s string) int {
	for i, x := range l {
		if x == s {
			return i
		}
	}
	return -1
}

func (e *env) callUser(fn *Function, args []any) any {
	e.step(1)
	e.depth++
	if e.depth > MaxCallDepth {
		panic(limitPanic{fmt.Sprintf("calls nested deeper than %d", MaxCallDepth)})
	}
	defer func() { e.depth-- }()
	inner := &frame{parent: fn.closure, names: fn.params, vals: args}
	return fn.body.eval(e, inner)
}

// call invokes any function value with positional arguments.
func (e *env) call(fn *Function, args []any) any {
	if fn.bi != nil {
		return e.callBuiltinArgs(fn.bi, args, nil)
	}
	if len(args) != len(fn.params) {
		return nil
	}
	return e.callUser(fn, args)
}

func (n *callNode) callBuiltin(e *env, f *frame, bi *builtin) any {
	var buf [4]any
	args := buf[:0]
	if len(n.args) > len(buf) {
		args = make([]any, 0, len(n.args))
	}
	for _, a := range n.args {
		args = append(args, a.eval(e, f))
	}
	return e.callBuiltinArgs(bi, args, n.names)
}

// utest is one unary test: a comparison with the input (`< 10`), or an
// expression whose value the input must equal, lie in, or (when it reads
// `?`) be true.
type utest struct {
	op    string
	x     node
	usesQ bool
}

func (t *utest) match(e *env, f *frame, in any) any {
	if t.op != "" {
		v := t.x.eval(e, f)
		return compareOp(t.op, in, v)
	}
	if t.usesQ {
		v := t.x.eval(e, &frame{parent: f, name: "?", val: in})
		if b, ok := v.(bool); ok {
			return b
		}
		return testValue(in, v)
	}
	if c, ok := t.x.(*constListNode); ok {
		return testValue(in, c.v) // read only: no copy
	}
	return testValue(in, t.x.eval(e, f))
}

// testValue decides whether in satisfies the value of a test expression.
func testValue(in, v any) any {
	switch x := v.(type) {
	case *Range:
		return inRange(in, x)
	case []any:
		if l, ok := in.([]any); ok {
			// A list is in a list of lists when it equals one of them.
			for _, el := range x {
				if equal(l, norm(el)) == true {
					return true
				}
			}
			return false
		}
		// Membership: elements of another type simply do not match.
		for _, el := range x {
			el = norm(el)
			var r any
			if rg, ok := el.(*Range); ok {
				r = inRange(in, rg)
			} else {
				r = equal(in, el)
			}
			if r == true {
				return true
			}
		}
		return false
	case bool:
		if _, ok := in.(bool); !ok && in != nil {
			return x
		}
	}
	return equal(in, v)
}

// inRange tests whether x lies in r.
func inRange(x any, r *Range) any {
	switch r.Op {
	case "=":
		return equal(x, r.Start)
	case "!=":
		if b, ok := equal(x, r.Start).(bool); ok {
			return !b
		}
		return nil
	}
	if r.Start != nil || r.Op == "" {
		c, ok := compare(x, r.Start)
		if !ok {
			return nil
		}
		if c < 0 || c == 0 && !r.StartClosed {
			return false
		}
	}
	if r.End != nil || r.Op == "" {
		c, ok := compare(x, r.End)
		if !ok {
			return nil
		}
		if c > 0 || c == 0 && !r.EndClosed {
			return false
		}
	}
	return true
}

func usesQ(n node) (found bool) {
	walk(n, func(x node) {
		if r, ok := x.(*refNode); ok && r.name == "?" {
			found = true
		}
	})
	return found
}

// walk visits n and its children.
func walk(n node, fn func(node)) {
	if n == nil {
		return
	}
	fn(n)
	switch x := n.(type) {
	case *negNode:
		walk(x.x, fn)
	case *arithNode:
		walk(x.l, fn)
		walk(x.r, fn)
	case *andNode:
		walk(x.l, fn)
		walk(x.r, fn)
	case *orNode:
		walk(x.l, fn)
		walk(x.r, fn)
	case *cmpNode:
		walk(x.l, fn)
		walk(x.r, fn)
	case *betweenNode:
		walk(x.x, fn)
		walk(x.lo, fn)
		walk(x.hi, fn)
	case *inNode:
		walk(x.x, fn)
		for _, t := range x.tests {
			walk(t.x, fn)
		}
	case *instanceNode:
		walk(x.x, fn)
	case *ifNode:
		walk(x.c, fn)
		walk(x.a, fn)
		walk(x.b, fn)
	case *listNode:
		for _, el := range x.elems {
			walk(el, fn)
		}
	case *contextNode:
		for _, v := range x.vals {
			walk(v, fn)
		}
	case *rangeNode:
		walk(x.lo, fn)
		walk(x.hi, fn)
	case *cmpRangeNode:
		walk(x.x, fn)
	case *pathNode:
		walk(x.x, fn)
	case *filterNode:
		walk(x.x, fn)
		walk(x.f, fn)
	case *forNode:
		for _, it := range x.iters {
			walk(it.in, fn)
			walk(it.to, fn)
		}
		walk(x.body, fn)
	case *quantNode:
		for _, it := range x.iters {
			walk(it.in, fn)
			walk(it.to, fn)
		}
		walk(x.body, fn)
	case *funcNode:
		walk(x.body, fn)
	case *callNode:
		walk(x.fn, fn)
		for _, a := range x.args {
			walk(a, fn)
		}
	}
}

// fold evaluates a node whose inputs are all literals once, at parse time.
func fold(n node) node {
	constant := true
	switch x := n.(type) {
	case *negNode:
		_, constant = x.x.(*litNode)
	case *arithNode:
		_, a := x.l.(*litNode)
		_, b := x.r.(*litNode)
		constant = a && b
	case *listNode:
		for _, el := range x.elems {
			if _, ok := el.(*litNode); !ok {
				constant = false
			}
		}
	case *rangeNode:
		_, a := x.lo.(*litNode)
		_, b := x.hi.(*litNode)
		constant = a && b
	default:
		constant = false
	}
	if !constant {
		return n
	}
	v := n.eval(&env{}, nil)
	if l, ok := v.([]any); ok {
		return &constListNode{l}
	}
	return &litNode{v}
}
