package dmn

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sextant-dev/sextant/navigators/feel"
)

// expression is a compiled boxed expression.
type expression interface {
	eval(s *feel.Session, sc feel.Scope) (any, error)
}

// where locates an expression for evaluation errors.
type where struct {
	file, elem string
	line       int
}

func (w where) fail(err error) error {
	var ee *EvalError
	if errors.As(err, &ee) {
		return err // the innermost position is the useful one
	}
	return &EvalError{File: w.file, Line: w.line, Element: w.elem, Err: err}
}

func (l *loader) where(el *elem) where {
	return where{file: l.file, elem: describe(el), line: el.line}
}

// exprKinds are the elements that hold a boxed expression.
var exprKinds = map[string]bool{
	"literalExpression": true, "decisionTable": true, "context": true, "invocation": true,
	"functionDefinition": true, "relation": true, "list": true, "conditional": true,
	"filter": true, "for": true, "some": true, "every": true,
}

// exprIn compiles the expression held by el (a decision, a context
// entry, a binding): nil when it holds none.
func (l *loader) exprIn(el *elem) (expression, error) {
	for _, k := range el.kids {
		if !namespaces[k.space] {
			continue
		}
		if exprKinds[k.name] {
			return l.compile(k)
		}
		switch k.name {
		case "variable", "description", "extensionElements", "informationRequirement",
			"knowledgeRequirement", "authorityRequirement", "question", "allowedAnswers",
			"formalParameter", "parameter", "supportedObjective", "impactedPerformanceIndicator",
			"decisionMaker", "decisionOwner", "usingProcess", "usingTask", "typeRef", "text":
		default:
			if el.name == "decision" || el.name == "encapsulatedLogic" || el.name == "contextEntry" {
				return nil, l.errf(k, "unsupported expression <%s>", k.name)
			}
		}
	}
	return nil, nil
}

// sub compiles the expression inside the child tag of el (the <in> of a
// filter, the <then> of a conditional).
func (l *loader) sub(el *elem, tag string) (expression, error) {
	c := el.child(tag)
	if c == nil {
		return nil, l.errf(el, "missing <%s>", tag)
	}
	x, err := l.exprIn(c)
	if err != nil {
		return nil, err
	}
	if x == nil {
		return nil, l.errf(c, "<%s> holds no expression", tag)
	}
	return x, nil
}

func (l *loader) compile(el *elem) (expression, error) {
	switch el.name {
	case "literalExpression":
		src, _ := el.textOf("text")
		if strings.TrimSpace(src) == "" {
			return nullExpr{}, nil
		}
		if lang := el.attr("expressionLanguage"); lang != "" && !isFEEL(lang) {
			return nil, l.errf(el, "expression language %q is not supported", lang)
		}
		x, err := l.feelExpr(el, src)
		if err != nil {
			return nil, err
		}
		lit := &literal{x: x, at: l.where(el)}
		if tr := el.attr("typeRef"); tr != "" {
			t, err := l.typeRef(el, tr)
			if err != nil {
				return nil, err
			}
			lit.t = t
		}
		return lit, nil
	case "decisionTable":
		return l.table(el)
	case "context":
		c := &contextExpr{at: l.where(el)}
		for _, ce := range el.children("contextEntry") {
			x, err := l.exprIn(ce)
			if err != nil {
				return nil, err
			}
			if x == nil {
				x = nullExpr{}
			}
			entry := contextEntry{x: x}
			if v := ce.child("variable"); v != nil {
				entry.name = v.attr("name")
				if entry.t, err = l.typeRef(v, v.attr("typeRef")); err != nil {
					return nil, err
				}
				c.names = append(c.names, entry.name)
			} else {
				entry.result = true
			}
			c.entries = append(c.entries, entry)
		}
		return c, nil
	case "invocation":
		callee, err := l.exprIn(el)
		if err != nil {
			return nil, err
		}
		if callee == nil {
			return nil, l.errf(el, "invocation without the function to call")
		}
		inv := &invocation{fn: callee, at: l.where(el)}
		for _, b := range el.children("binding") {
			p := b.child("parameter")
			if p == nil {
				return nil, l.errf(b, "binding without a parameter")
			}
			x, err := l.exprIn(b)
			if err != nil {
				return nil, err
			}
			if x == nil {
				x = nullExpr{}
			}
			inv.names = append(inv.names, p.attr("name"))
			inv.args = append(inv.args, x)
		}
		return inv, nil
	case "functionDefinition":
		if k := el.attr("kind"); k != "" && k != "FEEL" {
			return nil, l.errf(el, "%s functions are not supported", k)
		}
		fd := &funcDef{}
		for _, p := range el.children("formalParameter") {
			t, err := l.typeRef(p, p.attr("typeRef"))
			if err != nil {
				return nil, err
			}
			fd.params = append(fd.params, param{p.attr("name"), t})
			fd.names = append(fd.names, p.attr("name"))
		}
		body, err := l.exprIn(el)
		if err != nil {
			return nil, err
		}
		if body == nil {
			body = nullExpr{}
		}
		fd.body = body
		return fd, nil
	case "relation":
		r := &relation{}
		for _, c := range el.children("column") {
			r.cols = append(r.cols, c.attr("name"))
		}
		for _, row := range el.children("row") {
			var cells []expression
			for _, c := range row.kids {
				if exprKinds[c.name] {
					x, err := l.compile(c)
					if err != nil {
						return nil, err
					}
					cells = append(cells, x)
				}
			}
			if len(cells) != len(r.cols) {
				return nil, l.errf(row, "row has %d cells for %d columns", len(cells), len(r.cols))
			}
			r.rows = append(r.rows, cells)
		}
		return r, nil
	case "list":
		li := &listExpr{}
		for _, c := range el.kids {
			if exprKinds[c.name] {
				x, err := l.compile(c)
				if err != nil {
					return nil, err
				}
				li.items = append(li.items, x)
			}
		}
		return li, nil
	case "conditional":
		c := &conditional{}
		var err error
		if c.cond, err = l.sub(el, "if"); err != nil {
			return nil, err
		}
		if c.then, err = l.sub(el, "then"); err != nil {
			return nil, err
		}
		if c.els, err = l.sub(el, "else"); err != nil {
			return nil, err
		}
		return c, nil
	case "filter":
		f := &filterExpr{}
		var err error
		if f.in, err = l.sub(el, "in"); err != nil {
			return nil, err
		}
		if f.match, err = l.sub(el, "match"); err != nil {
			return nil, err
		}
		return f, nil
	case "for", "some", "every":
		it := &iterator{kind: el.name, name: el.attr("iteratorVariable")}
		if it.name == "" {
			return nil, l.errf(el, "missing iteratorVariable")
		}
		var err error
		if it.in, err = l.sub(el, "in"); err != nil {
			return nil, err
		}
		tag := "satisfies"
		if el.name == "for" {
			tag = "return"
		}
		if it.body, err = l.sub(el, tag); err != nil {
			return nil, err
		}
		return it, nil
	}
	return nil, l.errf(el, "unsupported expression <%s>", el.name)
}

func isFEEL(lang string) bool {
	return strings.Contains(lang, "FEEL") || strings.Contains(lang, "feel")
}

// scope is one level of names for FEEL: a decision's requirements, a
// context's entries, a function's parameters.
type scope struct {
	parent feel.Scope
	names  []string
	vals   []any
}

// Lookup implements feel.Scope; later names shadow earlier ones.
func (s *scope) Lookup(name string) (any, bool) {
	for i := len(s.names) - 1; i >= 0; i-- {
		if s.names[i] == name {
			if i < len(s.vals) {
				return s.vals[i], true
			}
			return nil, false
		}
	}
	if s.parent != nil {
		return s.parent.Lookup(name)
	}
	return nil, false
}

type nullExpr struct{}

func (nullExpr) eval(*feel.Session, feel.Scope) (any, error) { return nil, nil }

type literal struct {
	x  *feel.Expr
	t  *typ
	at where
}

func (e *literal) eval(s *feel.Session, sc feel.Scope) (any, error) {
	v, err := s.Eval(e.x, sc)
	if err != nil {
		return nil, e.at.fail(err)
	}
	if e.t != nil {
		v, _ = coerce(s, v, e.t)
	}
	return v, nil
}

type contextEntry struct {
	name   string
	t      *typ
	x      expression
	result bool // the entry without a name: the context's value
}

type contextExpr struct {
	entries []contextEntry
	names   []string
	at      where
}

func (c *contextExpr) eval(s *feel.Session, sc feel.Scope) (any, error) {
	// Entries see the entries before them (and, through functions
	// defined in them, the ones after: the scope is shared).
	in := &scope{parent: sc, names: c.names, vals: make([]any, 0, len(c.names))}
	out := feel.NewContext()
	for _, e := range c.entries {
		v, err := e.x.eval(s, in)
		if err != nil {
			return nil, err
		}
		if e.result {
			return v, nil
		}
		if e.t != nil {
			v, _ = coerce(s, v, e.t)
		}
		in.vals = append(in.vals, v)
		out.Put(e.name, v)
	}
	return out, nil
}

type invocation struct {
	fn    expression
	names []string
	args  []expression
	at    where
}

func (inv *invocation) eval(s *feel.Session, sc feel.Scope) (any, error) {
	f, err := inv.fn.eval(s, sc)
	if err != nil {
		return nil, err
	}
	fn, ok := f.(*feel.Function)
	if !ok {
		return nil, inv.at.fail(fmt.Errorf("invoked %s is not a function", feel.Format(f)))
	}
	params := fn.Params()
	args := make([]any, len(params))
	for i, name := range inv.names {
		k := -1
		for j, p := range params {
			if p == name {
				k = j
			}
		}
		if k < 0 {
			return nil, inv.at.fail(fmt.Errorf("binding %q: the function has no such parameter", name))
		}
		if args[k], err = inv.args[i].eval(s, sc); err != nil {
			return nil, err
		}
	}
	v, err := s.Call(fn, args)
	if err != nil {
		return nil, inv.at.fail(err)
	}
	return v, nil
}

type funcDef struct {
	params []param
	names  []string
	body   expression
}

func (fd *funcDef) eval(_ *feel.Session, sc feel.Scope) (any, error) {
	return feel.NewFunction("", fd.names, func(s *feel.Session, args []any) (any, error) {
		return invoke(s, sc, fd.params, fd.names, args, fd.body, nil)
	}), nil
}

// invoke evaluates a function body with its arguments bound: an argument
// that does not conform to its parameter's type makes the result null, as
// DMN says of invocations.
func invoke(s *feel.Session, parent feel.Scope, params []param, names []string, args []any, body expression, out *typ) (any, error) {
	vals := make([]any, len(args))
	for i, a := range args {
		v, ok := coerce(s, a, params[i].t)
		if !ok {
			return nil, nil
		}
		vals[i] = v
	}
	if body == nil {
		return nil, nil
	}
	v, err := body.eval(s, &scope{parent: parent, names: names, vals: vals})
	if err != nil {
		return nil, err
	}
	if out != nil {
		v, _ = coerce(s, v, out)
	}
	return v, nil
}

func (b *bkm) invoke(s *feel.Session, args []any) (any, error) {
	if b.broken != nil {
		return nil, b.broken
	}
	var parent feel.Scope
	if len(b.reqKnow) > 0 {
		sc := &scope{}
		for _, k := range b.reqKnow {
			sc.names = append(sc.names, k.varName())
			sc.vals = append(sc.vals, k.function())
		}
		parent = sc
	}
	names := b.fn.Params()
	return invoke(s, parent, b.params, names, args, b.body, b.out)
}

type relation struct {
	cols []string
	rows [][]expression
}

func (r *relation) eval(s *feel.Session, sc feel.Scope) (any, error) {
	out := make([]any, 0, len(r.rows))
	for _, row := range r.rows {
		c := feel.NewContext()
		for i, x := range row {
			v, err := x.eval(s, sc)
			if err != nil {
				return nil, err
			}
			c.Put(r.cols[i], v)
		}
		out = append(out, c)
	}
	return out, nil
}

type listExpr struct{ items []expression }

func (li *listExpr) eval(s *feel.Session, sc feel.Scope) (any, error) {
	out := make([]any, 0, len(li.items))
	for _, x := range li.items {
		v, err := x.eval(s, sc)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

type conditional struct{ cond, then, els expression }

func (c *conditional) eval(s *feel.Session, sc feel.Scope) (any, error) {
	v, err := c.cond.eval(s, sc)
	if err != nil {
		return nil, err
	}
	if v == true {
		return c.then.eval(s, sc)
	}
	return c.els.eval(s, sc)
}

type filterExpr struct{ in, match expression }

func (f *filterExpr) eval(s *feel.Session, sc feel.Scope) (any, error) {
	v, err := f.in.eval(s, sc)
	if err != nil {
		return nil, err
	}
	l, ok := feel.Value(v).([]any)
	if !ok {
		if v == nil {
			return nil, nil
		}
		l = []any{v}
	}
	out := []any{}
	for _, el := range l {
		el = feel.Value(el)
		item := &scope{parent: sc, names: []string{"item"}, vals: []any{el}}
		var inner feel.Scope = item
		if isContext(el) {
			inner = &ctxScope{parent: item, ctx: el}
		}
		m, err := f.match.eval(s, inner)
		if err != nil {
			return nil, err
		}
		if m == true {
			out = append(out, el)
		}
	}
	return out, nil
}

// ctxScope puts a context's entries in scope (a filter over contexts).
type ctxScope struct {
	parent feel.Scope
	ctx    any
}

func (c *ctxScope) Lookup(name string) (any, bool) {
	if v, ok := ctxGet(c.ctx, name); ok {
		return v, true
	}
	return c.parent.Lookup(name)
}

type iterator struct {
	kind     string // for, some, every
	name     string
	in, body expression
}

func (it *iterator) eval(s *feel.Session, sc feel.Scope) (any, error) {
	v, err := it.in.eval(s, sc)
	if err != nil {
		return nil, err
	}
	l, ok := feel.Value(v).([]any)
	if !ok {
		if v == nil {
			return nil, nil
		}
		l = []any{v}
	}
	var out []any
	if it.kind == "for" {
		out = make([]any, 0, len(l))
	}
	unknown := false
	for _, el := range l {
		r, err := it.body.eval(s, &scope{parent: sc, names: []string{it.name}, vals: []any{feel.Value(el)}})
		if err != nil {
			return nil, err
		}
		switch it.kind {
		case "for":
			out = append(out, r)
		case "some":
			if r == true {
				return true, nil
			}
			if r != false {
				unknown = true
			}
		case "every":
			if r == false {
				return false, nil
			}
			if r != true {
				unknown = true
			}
		}
	}
	switch {
	case it.kind == "for":
		return out, nil
	case unknown:
		return nil, nil
	}
	return it.kind == "every", nil
}
