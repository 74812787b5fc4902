package dmn

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sextant-dev/sextant/navigators/feel"
)

// namespaces of DMN 1.1 to 1.5 models.
var namespaces = map[string]bool{
	"http://www.omg.org/spec/DMN/20151101/dmn.xsd": true,
	"http://www.omg.org/spec/DMN/20180521/MODEL/":  true,
	"https://www.omg.org/spec/DMN/20191111/MODEL/": true,
	"https://www.omg.org/spec/DMN/20211108/MODEL/": true,
	"https://www.omg.org/spec/DMN/20230324/MODEL/": true,
}

// Model is a loaded DMN model, ready to evaluate its decisions. It is
// immutable: one Model may serve many evaluations at once.
type Model struct {
	// Name and Namespace are the definitions' name and namespace.
	Name, Namespace string

	file      string
	decisions []*decision
	inputs    []*inputData
	bkms      []*bkm
	services  []*service
	// byName finds decisions and decision services by name or id.
	byName map[string]any
	// problems are the decisions and knowledge models that cannot run.
	problems []*Error
}

type decision struct {
	name, id string
	line     int
	idx      int
	typ      *typ
	expr     expression // nil: the decision has no logic
	broken   error      // why the logic cannot run (a FEEL syntax error)
	reqDec   []*decision
	reqIn    []*inputData
	reqKnow  []knowledge
	// names are the variables the expression sees, in the order the
	// scope's values are filled: inputs, decisions, knowledge.
	names []string
}

type inputData struct {
	name, id string
	line     int
	idx      int
	typ      *typ
}

// knowledge is what a knowledge requirement brings into scope: a
// business knowledge model or a decision service, both FEEL functions.
type knowledge interface {
	varName() string
	function() *feel.Function
}

type bkm struct {
	name, id string
	line     int
	fn       *feel.Function
	params   []param
	body     expression
	out      *typ
	reqKnow  []knowledge
	broken   error
}

func (b *bkm) varName() string          { return b.name }
func (b *bkm) function() *feel.Function { return b.fn }

type service struct {
	name, id  string
	line      int
	fn        *feel.Function
	outputs   []*decision
	inDec     []*decision
	inData    []*inputData
	encaps    []*decision
	paramList []string
}

func (s *service) varName() string          { return s.name }
func (s *service) function() *feel.Function { return s.fn }

type param struct {
	name string
	t    *typ
}

// ParseFile reads and loads the model in path.
func ParseFile(path string) (*Model, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Size() > MaxSize {
		return nil, &Error{File: path, Msg: fmt.Sprintf("model is larger than %d bytes", MaxSize)}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse loads a model from its XML. file names it in error messages.
// Every FEEL expression is parsed here, so a model that loads has no
// syntax error left; errors are *Error values with the line and element.
func Parse(file string, data []byte) (*Model, error) {
	root, err := readXML(file, data)
	if err != nil {
		return nil, err
	}
	if root.name != "definitions" || !namespaces[root.space] {
		return nil, &Error{File: file, Line: root.line, Element: root.name,
			Msg: fmt.Sprintf("not a DMN model: want <definitions> in a DMN 1.1-1.5 namespace, got <%s> in %q", root.name, root.space)}
	}
	l := &loader{file: filepath.Base(file), root: root, items: map[string]*itemDef{}, byID: map[string]*elem{}}
	if file != "" {
		l.file = file
	}
	return l.load()
}

type itemDef struct {
	el       *elem
	t        *typ
	resolved bool
	busy     bool
}

type loader struct {
	file  string
	root  *elem
	opts  []feel.Option
	items map[string]*itemDef
	byID  map[string]*elem
	m     *Model

	decs map[*elem]*decision
	ins  map[*elem]*inputData
	bkms map[*elem]*bkm
	svcs map[*elem]*service
}

func (l *loader) errf(el *elem, format string, args ...any) error {
	return &Error{File: l.file, Line: el.line, Element: describe(el), Msg: fmt.Sprintf(format, args...)}
}

func (l *loader) load() (*Model, error) {
	m := &Model{Name: l.root.attr("name"), Namespace: l.root.attr("namespace"), file: l.file, byName: map[string]any{}}
	l.m = m
	// Every name the model declares may appear in its expressions; FEEL
	// needs the ones with spaces and keywords declared.
	var names []string
	seen := map[string]bool{}
	add := func(n string) {
		if n != "" && !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	var walk func(e *elem)
	walk = func(e *elem) {
		if namespaces[e.space] {
			add(e.attr("name"))
		}
		add(e.attr("iteratorVariable"))
		if id := e.attr("id"); id != "" && namespaces[e.space] {
			l.byID[id] = e
		}
		for _, k := range e.kids {
			walk(k)
		}
	}
	walk(l.root)
	l.opts = []feel.Option{feel.WithNames(names...)}

	for _, k := range l.root.kids {
		if k.name == "itemDefinition" && namespaces[k.space] {
			l.items[k.attr("name")] = &itemDef{el: k}
		}
	}
	for _, k := range l.root.kids {
		if k.name == "itemDefinition" && namespaces[k.space] {
			if _, err := l.item(k.attr("name")); err != nil {
				return nil, err
			}
		}
	}
	l.decs, l.ins, l.bkms, l.svcs = map[*elem]*decision{}, map[*elem]*inputData{}, map[*elem]*bkm{}, map[*elem]*service{}
	// First pass: declare every element, so that references may point
	// forward.
	for _, k := range l.root.kids {
		if !namespaces[k.space] {
			continue
		}
		switch k.name {
		case "decision":
			d := &decision{name: k.attr("name"), id: k.attr("id"), line: k.line, idx: len(m.decisions)}
			if d.name == "" {
				return nil, l.errf(k, "decision without a name")
			}
			m.decisions = append(m.decisions, d)
			l.decs[k] = d
			if err := l.declare(k, d.name, d.id, d); err != nil {
				return nil, err
			}
		case "inputData":
			in := &inputData{name: k.attr("name"), id: k.attr("id"), line: k.line, idx: len(m.inputs)}
			m.inputs = append(m.inputs, in)
			l.ins[k] = in
		case "businessKnowledgeModel":
			b := &bkm{name: k.attr("name"), id: k.attr("id"), line: k.line}
			m.bkms = append(m.bkms, b)
			l.bkms[k] = b
		case "decisionService":
			s := &service{name: k.attr("name"), id: k.attr("id"), line: k.line}
			m.services = append(m.services, s)
			l.svcs[k] = s
			if err := l.declare(k, s.name, s.id, s); err != nil {
				return nil, err
			}
		case "import":
			return nil, l.errf(k, "imports are not supported")
		}
	}
	for el, in := range l.ins {
		t, err := l.varType(el)
		if err != nil {
			return nil, err
		}
		in.typ = t
	}
	for el, b := range l.bkms {
		if err := l.loadBKM(el, b); err != nil {
			return nil, err
		}
	}
	for el, s := range l.svcs {
		if err := l.loadService(el, s); err != nil {
			return nil, err
		}
	}
	for _, k := range l.root.kids {
		if d := l.decs[k]; d != nil {
			if err := l.loadDecision(k, d); err != nil {
				return nil, err
			}
		}
	}
	if err := l.checkCycles(); err != nil {
		return nil, err
	}
	return m, nil
}

func (l *loader) declare(el *elem, name, id string, v any) error {
	if prev, ok := l.m.byName[name]; ok && prev != v {
		return l.errf(el, "a decision or decision service named %q is declared twice", name)
	}
	l.m.byName[name] = v
	if id != "" {
		if _, ok := l.m.byName[id]; !ok {
			l.m.byName[id] = v
		}
	}
	return nil
}

// ref resolves an href ("#id") to the element it names.
func (l *loader) ref(from *elem, href string) (*elem, error) {
	ns, id, ok := strings.Cut(href, "#")
	if !ok {
		return nil, l.errf(from, "reference %q: want #id", href)
	}
	if ns != "" && ns != l.m.Namespace {
		return nil, l.errf(from, "reference %q: elements of other models (imports) are not supported", href)
	}
	el := l.byID[id]
	if el == nil {
		return nil, l.errf(from, "reference %q: no element with id %q", href, id)
	}
	return el, nil
}

func (l *loader) varType(el *elem) (*typ, error) {
	v := el.child("variable")
	if v == nil {
		return nil, nil
	}
	return l.typeRef(v, v.attr("typeRef"))
}

// typeRef resolves a type reference written on el.
func (l *loader) typeRef(el *elem, ref string) (*typ, error) {
	var ierr error
	t, ok := parseTypeName(ref, func(n string) *typ {
		if ierr != nil || l.items[n] == nil {
			return nil
		}
		t, err := l.item(n)
		if err != nil {
			ierr = err
		}
		return t
	})
	if ierr != nil {
		return nil, ierr
	}
	if !ok {
		return nil, l.errf(el, "unknown type %q", ref)
	}
	return t, nil
}

// item resolves the item definition named n.
func (l *loader) item(n string) (*typ, error) {
	d := l.items[n]
	if d.resolved || d.busy {
		if d.t == nil {
			// A recursive definition refers to itself before it is
			// complete: the reference is allocated and filled later.
			d.t = &typ{name: n}
		}
		return d.t, nil
	}
	d.busy = true
	d.t = &typ{name: n}
	t, err := l.itemType(d.el, d.t)
	if err != nil {
		return nil, err
	}
	d.t, d.resolved, d.busy = t, true, false
	return t, nil
}

// itemType builds the type of an item definition or item component,
// filling into when it is not nil.
func (l *loader) itemType(el *elem, into *typ) (*typ, error) {
	one := &typ{name: el.attr("name"), kind: kAny}
	if ref, ok := el.textOf("typeRef"); ok {
		base, err := l.typeRef(el, ref)
		if err != nil {
			return nil, err
		}
		if base != nil {
			one.base = base
			one.kind, one.elem, one.fields = base.kind, base.elem, base.fields
		}
	} else if ref := el.attr("typeRef"); ref != "" {
		// DMN 1.1 writes typeRef as an attribute on item components.
		base, err := l.typeRef(el, ref)
		if err != nil {
			return nil, err
		}
		if base != nil {
			one.base = base
			one.kind, one.elem, one.fields = base.kind, base.elem, base.fields
		}
	}
	comps := el.children("itemComponent")
	if len(comps) > 0 {
		one.kind, one.base = kContext, nil
		one.fields = nil
		for _, c := range comps {
			ft, err := l.itemType(c, nil)
			if err != nil {
				return nil, err
			}
			one.fields = append(one.fields, field{c.attr("name"), ft})
		}
	}
	if el.child("functionItem") != nil {
		one.kind, one.base = kFunction, nil
	}
	if av := el.child("allowedValues"); av != nil {
		txt, _ := av.textOf("text")
		u, err := l.unaryTests(av, txt)
		if err != nil {
			return nil, err
		}
		one.allowed = u
	}
	var tc *feel.UnaryTests
	if c := el.child("typeConstraint"); c != nil {
		txt, _ := c.textOf("text")
		u, err := l.unaryTests(c, txt)
		if err != nil {
			return nil, err
		}
		tc = u
	}
	out := one
	if el.attr("isCollection") == "true" {
		out = &typ{name: one.name, kind: kList, elem: one, listAllowed: tc}
		one.name = ""
	} else if tc != nil {
		if one.allowed == nil {
			one.allowed = tc
		} else {
			one = &typ{name: one.name, kind: one.kind, elem: one.elem, fields: one.fields, base: one, allowed: tc}
			out = one
		}
	}
	if into != nil {
		*into = *out
		return into, nil
	}
	return out, nil
}

func (l *loader) unaryTests(el *elem, src string) (*feel.UnaryTests, error) {
	src = strings.TrimSpace(src)
	if src == "" {
		return nil, nil
	}
	u, err := feel.ParseUnaryTests(src, l.opts...)
	if err != nil {
		return nil, l.feelErr(el, src, err)
	}
	return u, nil
}

func (l *loader) feelExpr(el *elem, src string) (*feel.Expr, error) {
	x, err := feel.Parse(src, l.opts...)
	if err != nil {
		return nil, l.feelErr(el, src, err)
	}
	return x, nil
}

// feelErr positions a FEEL syntax error in the file: the element's line
// plus the expression's own line.
func (l *loader) feelErr(el *elem, src string, err error) error {
	line := el.line
	msg := err.Error()
	if se, ok := err.(*feel.SyntaxError); ok {
		// <text> usually starts on the element's line or the next one.
		msg = fmt.Sprintf("FEEL %q: %s: %s", short(src), se.Pos, se.Msg)
	}
	return &Error{File: l.file, Line: line, Element: describe(el), Msg: msg}
}

func short(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}

func (l *loader) loadBKM(el *elem, b *bkm) error {
	fd := el.child("encapsulatedLogic")
	var params []param
	if fd != nil {
		if k := fd.attr("kind"); k != "" && k != "FEEL" {
			return l.errf(fd, "%s functions are not supported", k)
		}
		for _, p := range fd.children("formalParameter") {
			t, err := l.typeRef(p, p.attr("typeRef"))
			if err != nil {
				return err
			}
			params = append(params, param{p.attr("name"), t})
		}
		body, err := l.exprIn(fd)
		if err != nil {
			if !l.problem(err) {
				return err
			}
			b.broken = err
		}
		b.body = body
		if tr := fd.attr("typeRef"); tr != "" {
			if b.out, err = l.typeRef(fd, tr); err != nil {
				return err
			}
		}
	}
	b.params = params
	var err error
	if b.reqKnow, err = l.knowledgeReqs(el); err != nil {
		return err
	}
	names := make([]string, len(params))
	for i, p := range params {
		names[i] = p.name
	}
	b.fn = feel.NewFunction(b.name, names, b.invoke)
	return nil
}

func (l *loader) knowledgeReqs(el *elem) ([]knowledge, error) {
	var out []knowledge
	for _, kr := range el.children("knowledgeRequirement") {
		rk := kr.child("requiredKnowledge")
		if rk == nil {
			continue
		}
		t, err := l.ref(rk, rk.attr("href"))
		if err != nil {
			return nil, err
		}
		switch {
		case l.bkms[t] != nil:
			out = append(out, l.bkms[t])
		case l.svcs[t] != nil:
			out = append(out, l.svcs[t])
		default:
			return nil, l.errf(rk, "%q is not a business knowledge model or decision service", rk.attr("href"))
		}
	}
	return out, nil
}

func (l *loader) loadDecision(el *elem, d *decision) error {
	t, err := l.varType(el)
	if err != nil {
		return err
	}
	d.typ = t
	for _, ir := range el.children("informationRequirement") {
		for _, r := range ir.kids {
			if r.name != "requiredDecision" && r.name != "requiredInput" {
				continue
			}
			target, err := l.ref(r, r.attr("href"))
			if err != nil {
				return err
			}
			if r.name == "requiredDecision" {
				rd := l.decs[target]
				if rd == nil {
					return l.errf(r, "%q is not a decision", r.attr("href"))
				}
				d.reqDec = append(d.reqDec, rd)
			} else {
				in := l.ins[target]
				if in == nil {
					return l.errf(r, "%q is not an input data", r.attr("href"))
				}
				d.reqIn = append(d.reqIn, in)
			}
		}
	}
	if d.reqKnow, err = l.knowledgeReqs(el); err != nil {
		return err
	}
	for _, in := range d.reqIn {
		d.names = append(d.names, in.name)
	}
	for _, rd := range d.reqDec {
		d.names = append(d.names, rd.name)
	}
	for _, k := range d.reqKnow {
		d.names = append(d.names, k.varName())
	}
	if d.expr, err = l.exprIn(el); err != nil {
		if !l.problem(err) {
			return err
		}
		d.broken = err
	}
	return nil
}

// problem records an error in a decision's logic, which fails that
// decision (and those that require it) when evaluated rather than the
// whole model at load. It reports whether err is such an error.
func (l *loader) problem(err error) bool {
	e, ok := err.(*Error)
	if !ok {
		return false
	}
	l.m.problems = append(l.m.problems, e)
	return true
}

// Problems lists the errors in the logic of decisions and business
// knowledge models (a FEEL syntax error, an unsupported expression): the
// model loads, and evaluating a decision that needs one of them returns
// its error.
func (m *Model) Problems() []*Error { return m.problems }

func (l *loader) loadService(el *elem, s *service) error {
	collect := func(tag string) ([]*decision, error) {
		var out []*decision
		for _, r := range el.children(tag) {
			t, err := l.ref(r, r.attr("href"))
			if err != nil {
				return nil, err
			}
			d := l.decs[t]
			if d == nil {
				return nil, l.errf(r, "%q is not a decision", r.attr("href"))
			}
			out = append(out, d)
		}
		return out, nil
	}
	var err error
	if s.outputs, err = collect("outputDecision"); err != nil {
		return err
	}
	if s.inDec, err = collect("inputDecision"); err != nil {
		return err
	}
	if s.encaps, err = collect("encapsulatedDecision"); err != nil {
		return err
	}
	for _, r := range el.children("inputData") {
		t, err := l.ref(r, r.attr("href"))
		if err != nil {
			return err
		}
		in := l.ins[t]
		if in == nil {
			return l.errf(r, "%q is not an input data", r.attr("href"))
		}
		s.inData = append(s.inData, in)
	}
	if len(s.outputs) == 0 {
		return l.errf(el, "decision service without output decisions")
	}
	for _, d := range s.inDec {
		s.paramList = append(s.paramList, d.name)
	}
	for _, in := range s.inData {
		s.paramList = append(s.paramList, in.name)
	}
	s.fn = feel.NewFunction(s.name, s.paramList, func(sess *feel.Session, args []any) (any, error) {
		in := make(map[string]any, len(args))
		for i, a := range args {
			in[s.paramList[i]] = a
		}
		return l.m.evalService(context.Background(), sess, s, in, true, false)
	})
	return nil
}

// checkCycles refuses decisions that require themselves.
func (l *loader) checkCycles() error {
	state := make([]uint8, len(l.m.decisions))
	var visit func(d *decision) error
	visit = func(d *decision) error {
		switch state[d.idx] {
		case 1:
			return &Error{File: l.file, Line: d.line, Element: fmt.Sprintf("decision %q", d.name), Msg: "requires itself (a cycle of required decisions)"}
		case 2:
			return nil
		}
		state[d.idx] = 1
		for _, r := range d.reqDec {
			if err := visit(r); err != nil {
				return err
			}
		}
		state[d.idx] = 2
		return nil
	}
	for _, d := range l.m.decisions {
		if err := visit(d); err != nil {
			return err
		}
	}
	return nil
}

// Decisions lists the names of the model's decisions, in document order.
func (m *Model) Decisions() []string {
	out := make([]string, len(m.decisions))
	for i, d := range m.decisions {
		out[i] = d.name
	}
	return out
}

// Services lists the names of the model's decision services.
func (m *Model) Services() []string {
	out := make([]string, len(m.services))
	for i, s := range m.services {
		out[i] = s.name
	}
	return out
}

// Inputs lists the names of the input data a decision (or decision
// service) reads, directly or through the decisions it requires, in
// first-use order.
func (m *Model) Inputs(name string) ([]string, error) {
	v, ok := m.byName[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNoDecision, name)
	}
	var out []string
	seen := map[*decision]bool{}
	var visit func(d *decision)
	visit = func(d *decision) {
		if seen[d] {
			return
		}
		seen[d] = true
		for _, in := range d.reqIn {
			if !slices.Contains(out, in.name) {
				out = append(out, in.name)
			}
		}
		for _, r := range d.reqDec {
			visit(r)
		}
	}
	switch x := v.(type) {
	case *decision:
		visit(x)
	case *service:
		out = append(out, x.paramList...)
	}
	return out, nil
}
