package dmn

import (
	"fmt"
	"sort"
	"strings"

	"github.com/sextant-dev/sextant/navigators/feel"
)

type hitPolicy uint8

const (
	hitUnique hitPolicy = iota
	hitFirst
	hitPriority
	hitAny
	hitCollect
	hitRuleOrder
	hitOutputOrder
)

var hitPolicies = map[string]hitPolicy{
	"": hitUnique, "UNIQUE": hitUnique, "FIRST": hitFirst, "PRIORITY": hitPriority, "ANY": hitAny,
	"COLLECT": hitCollect, "RULE ORDER": hitRuleOrder, "OUTPUT ORDER": hitOutputOrder,
}

type aggregation uint8

const (
	aggNone aggregation = iota
	aggSum
	aggMin
	aggMax
	aggCount
)

var aggregations = map[string]aggregation{"": aggNone, "SUM": aggSum, "MIN": aggMin, "MAX": aggMax, "COUNT": aggCount}

type table struct {
	hit     hitPolicy
	agg     aggregation
	inputs  []tableInput
	outputs []tableOutput
	rules   []rule
	rows    [][]*feel.UnaryTests // the rules' input entries
	// outNames are the output names, the keys of a multi-output result.
	outNames []string
	hasDef   bool
	at       where
	file     string
}

type tableInput struct {
	x      *feel.Expr
	values *feel.UnaryTests
	line   int
}

type tableOutput struct {
	name   string
	t      *typ
	values *feel.UnaryTests
	// prio are the output values one by one, in priority order.
	prio []*feel.UnaryTests
	def  expression
}

type rule struct {
	id   string
	line int
	in   []*feel.UnaryTests // nil: "-"
	out  []expression
}

func (l *loader) table(el *elem) (expression, error) {
	hp := strings.TrimSpace(el.attr("hitPolicy"))
	hit, ok := hitPolicies[hp]
	if !ok {
		return nil, l.errf(el, "unknown hit policy %q", hp)
	}
	ag := strings.TrimSpace(el.attr("aggregation"))
	agg, ok := aggregations[ag]
	if !ok {
		return nil, l.errf(el, "unknown aggregation %q", ag)
	}
	if agg != aggNone && hit != hitCollect {
		return nil, l.errf(el, "aggregation %s needs hit policy COLLECT, not %s", ag, hp)
	}
	t := &table{hit: hit, agg: agg, at: l.where(el), file: l.file}
	for _, in := range el.children("input") {
		ie := in.child("inputExpression")
		if ie == nil {
			return nil, l.errf(in, "input without an inputExpression")
		}
		src, _ := ie.textOf("text")
		if strings.TrimSpace(src) == "" {
			return nil, l.errf(ie, "empty input expression")
		}
		x, err := l.feelExpr(ie, src)
		if err != nil {
			return nil, err
		}
		ti := tableInput{x: x, line: in.line}
		if iv := in.child("inputValues"); iv != nil {
			txt, _ := iv.textOf("text")
			if ti.values, err = l.unaryTests(iv, txt); err != nil {
				return nil, err
			}
		}
		t.inputs = append(t.inputs, ti)
	}
	outs := el.children("output")
	if len(outs) == 0 {
		return nil, l.errf(el, "decision table without outputs")
	}
	if len(outs) > 1 && agg != aggNone {
		return nil, l.errf(el, "aggregation %s needs a single output, the table has %d", ag, len(outs))
	}
	for _, o := range outs {
		to := tableOutput{name: o.attr("name")}
		if len(outs) > 1 && to.name == "" {
			return nil, l.errf(o, "an output of a multi-output table needs a name")
		}
		var err error
		if tr := o.attr("typeRef"); tr != "" {
			if to.t, err = l.typeRef(o, tr); err != nil {
				return nil, err
			}
		}
		if ov := o.child("outputValues"); ov != nil {
			txt, _ := ov.textOf("text")
			if to.values, err = l.unaryTests(ov, txt); err != nil {
				return nil, err
			}
			if to.prio, err = l.priorities(ov, txt); err != nil {
				return nil, err
			}
		}
		if d := o.child("defaultOutputEntry"); d != nil {
			if to.def, err = l.compile(d.withName("literalExpression")); err != nil {
				return nil, err
			}
			t.hasDef = true
		}
		t.outputs = append(t.outputs, to)
		t.outNames = append(t.outNames, to.name)
	}
	for _, r := range el.children("rule") {
		ru := rule{id: r.attr("id"), line: r.line}
		ins, outs := r.children("inputEntry"), r.children("outputEntry")
		if len(ins) != len(t.inputs) || len(outs) != len(t.outputs) {
			return nil, l.errf(r, "rule has %d input and %d output entries for %d inputs and %d outputs",
				len(ins), len(outs), len(t.inputs), len(t.outputs))
		}
		for _, ie := range ins {
			txt, _ := ie.textOf("text")
			u, err := l.unaryTests(ie, txt)
			if err != nil {
				return nil, err
			}
			if u != nil && strings.TrimSpace(txt) == "-" {
				u = nil
			}
			ru.in = append(ru.in, u)
		}
		for _, oe := range outs {
			x, err := l.compile(oe.withName("literalExpression"))
			if err != nil {
				return nil, err
			}
			ru.out = append(ru.out, x)
		}
		t.rules = append(t.rules, ru)
		t.rows = append(t.rows, ru.in)
	}
	return t, nil
}

// withName returns a copy of el under another tag: an output entry is
// read as the literal expression it is.
func (e *elem) withName(n string) *elem {
	c := *e
	c.name = n
	return &c
}

// priorities reads output values one by one: the order they are listed
// in ranks outputs for PRIORITY and OUTPUT ORDER.
func (l *loader) priorities(el *elem, src string) ([]*feel.UnaryTests, error) {
	if strings.TrimSpace(src) == "" {
		return nil, nil
	}
	x, err := feel.Parse("["+src+"]", l.opts...)
	if err != nil {
		return nil, nil // not a plain list of values: no ranking
	}
	v, err := x.Eval(nil)
	if err != nil {
		return nil, nil
	}
	list, _ := v.([]any)
	out := make([]*feel.UnaryTests, 0, len(list))
	for _, item := range list {
		u, err := feel.ParseUnaryTests(feel.Format(item))
		if err != nil {
			return nil, l.errf(el, "output value %s: %v", feel.Format(item), err)
		}
		out = append(out, u)
	}
	return out, nil
}

func (t *table) fail(line int, ruleID string, err error) error {
	w := t.at
	if line > 0 {
		w.line = line
	}
	if ruleID != "" {
		w.elem = "rule " + ruleID
	}
	return w.fail(err)
}

func (t *table) eval(s *feel.Session, sc feel.Scope) (any, error) {
	var ibuf [8]any
	in := ibuf[:0]
	if len(t.inputs) > len(ibuf) {
		in = make([]any, 0, len(t.inputs))
	}
	for _, ti := range t.inputs {
		v, err := s.Eval(ti.x, sc)
		if err != nil {
			return nil, t.fail(ti.line, "", err)
		}
		if ti.values != nil && v != nil {
			ok, err := s.Match(ti.values, v, sc)
			if err != nil {
				return nil, t.fail(ti.line, "", err)
			}
			if ok != true {
				return nil, t.fail(ti.line, "", fmt.Errorf("%w: input %s is not one of %s", ErrValue, feel.Format(v), ti.values))
			}
		}
		in = append(in, v)
	}
	var mbuf [16]int
	matched := mbuf[:0]
	var clash []int
	err := s.MatchRows(t.rows, in, sc, func(ri int) bool {
		if t.hit == hitUnique && len(matched) == 1 {
			clash = append(clash, matched[0], ri)
			return false
		}
		matched = append(matched, ri)
		return t.hit != hitFirst
	})
	if err != nil {
		return nil, t.at.fail(err)
	}
	if clash != nil {
		a, b := clash[0], clash[1]
		return nil, t.fail(t.rules[b].line, t.rules[b].id, fmt.Errorf("%w: UNIQUE table, rules %s and %s both match", ErrHitPolicy, ruleName(t.rules[a], a), ruleName(t.rules[b], b)))
	}
	if t.hit == hitFirst && len(matched) == 1 {
		return t.result(s, sc, &t.rules[matched[0]])
	}
	if len(matched) == 0 {
		return t.noMatch(s, sc)
	}
	switch t.hit {
	case hitUnique:
		return t.result(s, sc, &t.rules[matched[0]])
	case hitCollect:
		if t.agg == aggCount {
			return feel.NewNumber(int64(len(matched))), nil
		}
		if t.agg == aggSum {
			return t.sum(s, sc, matched)
		}
	}
	results := make([]any, len(matched))
	for i, ri := range matched {
		v, err := t.result(s, sc, &t.rules[ri])
		if err != nil {
			return nil, err
		}
		results[i] = v
	}
	switch t.hit {
	case hitAny:
		for i := 1; i < len(results); i++ {
			eq, err := s.Eval(equalExpr, pair{results[0], results[i]})
			if err != nil {
				return nil, t.at.fail(err)
			}
			if eq != true {
				return nil, t.fail(t.rules[matched[i]].line, t.rules[matched[i]].id, fmt.Errorf("%w: ANY table, rules %s and %s match with different outputs %s and %s",
					ErrHitPolicy, ruleName(t.rules[matched[0]], matched[0]), ruleName(t.rules[matched[i]], matched[i]), feel.Format(results[0]), feel.Format(results[i])))
			}
		}
		return results[0], nil
	case hitPriority, hitOutputOrder:
		keys := make([][]int, len(results))
		for i, v := range results {
			keys[i] = t.rank(s, v)
		}
		idx := make([]int, len(results))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return less(keys[idx[a]], keys[idx[b]]) })
		if t.hit == hitPriority {
			return results[idx[0]], nil
		}
		out := make([]any, len(idx))
		for i, k := range idx {
			out[i] = results[k]
		}
		return out, nil
	case hitCollect:
		switch t.agg {
		case aggMin:
			return s.Eval(minExpr, pair{results, nil})
		case aggMax:
			return s.Eval(maxExpr, pair{results, nil})
		}
	}
	return results, nil
}

func ruleName(r rule, i int) string {
	if r.id != "" {
		return fmt.Sprintf("%d (%s)", i+1, r.id)
	}
	return fmt.Sprint(i + 1)
}

// sum adds the outputs of the matched rules; a non-number makes it null.
func (t *table) sum(s *feel.Session, sc feel.Scope, matched []int) (any, error) {
	var total feel.Number
	for _, ri := range matched {
		v, err := t.result(s, sc, &t.rules[ri])
		if err != nil {
			return nil, err
		}
		n, ok := v.(feel.Number)
		if !ok {
			return nil, nil
		}
		if total, ok = total.Add(n); !ok {
			return nil, nil
		}
	}
	return total, nil
}

var (
	equalExpr = feel.MustParse("a = b")
	minExpr   = feel.MustParse("min(a)")
	maxExpr   = feel.MustParse("max(a)")
)

// pair is a scope of two variables, a and b.
type pair struct{ a, b any }

func (p pair) Lookup(name string) (any, bool) {
	switch name {
	case "a":
		return p.a, true
	case "b":
		return p.b, true
	}
	return nil, false
}

// rank returns the priority of a rule's outputs: for each output, the
// position of its value among the output values.
func (t *table) rank(s *feel.Session, v any) []int {
	key := make([]int, len(t.outputs))
	for i, o := range t.outputs {
		ov := v
		if len(t.outputs) > 1 {
			ov, _ = ctxGet(v, o.name)
		}
		key[i] = len(o.prio)
		for k, u := range o.prio {
			if m, err := s.Match(u, ov, nil); err == nil && m == true {
				key[i] = k
				break
			}
		}
	}
	return key
}

func less(a, b []int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// result evaluates a matched rule's output entries.
func (t *table) result(s *feel.Session, sc feel.Scope, r *rule) (any, error) {
	if len(t.outputs) == 1 {
		return t.output(s, sc, &t.outputs[0], r.out[0], r)
	}
	c := feel.NewContext()
	for i := range t.outputs {
		v, err := t.output(s, sc, &t.outputs[i], r.out[i], r)
		if err != nil {
			return nil, err
		}
		c.Put(t.outputs[i].name, v)
	}
	return c, nil
}

func (t *table) output(s *feel.Session, sc feel.Scope, o *tableOutput, x expression, r *rule) (any, error) {
	v, err := x.eval(s, sc)
	if err != nil {
		return nil, err
	}
	if o.values != nil && v != nil {
		ok, err := s.Match(o.values, v, sc)
		if err != nil {
			return nil, t.fail(r.line, r.id, err)
		}
		if ok != true {
			return nil, t.fail(r.line, r.id, fmt.Errorf("%w: output %s is not one of %s", ErrValue, feel.Format(v), o.values))
		}
	}
	if o.t != nil {
		v, _ = coerce(s, v, o.t)
	}
	return v, nil
}

// noMatch is the result when no rule matches: the default output entries
// when the table has them, else null; 0 for COUNT, and an empty list for
// COLLECT, RULE ORDER and OUTPUT ORDER without aggregation.
func (t *table) noMatch(s *feel.Session, sc feel.Scope) (any, error) {
	if t.hasDef {
		vals := make([]any, len(t.outputs))
		for i, o := range t.outputs {
			if o.def == nil {
				continue
			}
			v, err := o.def.eval(s, sc)
			if err != nil {
				return nil, err
			}
			if o.t != nil {
				v, _ = coerce(s, v, o.t)
			}
			vals[i] = v
		}
		if len(t.outputs) == 1 {
			return vals[0], nil
		}
		c := feel.NewContext()
		for i, o := range t.outputs {
			c.Put(o.name, vals[i])
		}
		return c, nil
	}
	switch {
	case t.hit == hitCollect && t.agg == aggCount:
		return feel.NewNumber(0), nil
	case t.hit == hitCollect && t.agg == aggNone, t.hit == hitRuleOrder, t.hit == hitOutputOrder:
		return []any{}, nil
	}
	return nil, nil
}
