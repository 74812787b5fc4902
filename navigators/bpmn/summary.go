package bpmn

import "github.com/sextant-dev/sextant/sdk"

// summary builds the sdk.Routine.
func (l *loader) summary() {
	m := l.m
	// The main process: the first executable one that a none start event
	// starts, else the first with a none start event, else the first;
	// in each round one that no call activity calls comes before one that
	// one does, wherever it stands in the file (a run that started the
	// called process would skip its caller).
	called := map[*node]bool{}
	for _, n := range m.byID {
		if n.called != nil {
			called[n.called] = true
		}
	}
	for _, pick := range []func(p *node) bool{
		func(p *node) bool { return len(p.starts) > 0 && l.executable(p) && !called[p] },
		func(p *node) bool { return len(p.starts) > 0 && !called[p] },
		func(p *node) bool { return len(p.starts) > 0 && l.executable(p) },
		func(p *node) bool { return len(p.starts) > 0 },
	} {
		for _, p := range m.procs {
			if m.main == nil && pick(p) {
				m.main = p
			}
		}
	}
	if m.main == nil {
		m.main = m.procs[0]
	}
	l.exprNames()
	r := &sdk.Routine{Hash: m.hash, ID: m.main.id, Expressions: l.exprs, Reads: l.reads.Reads()}
	ordered := append([]*node{m.main}, m.procs...)
	done := map[*node]bool{}
	for _, p := range ordered {
		if done[p] {
			continue
		}
		done[p] = true
		for _, s := range p.starts {
			r.Starts = append(r.Starts, s.id)
		}
		for _, s := range p.allStarts {
			if s.ev != evNone {
				r.Starts = append(r.Starts, s.id)
			}
		}
		if len(p.allStarts) == 0 {
			for _, s := range p.implicit {
				r.Starts = append(r.Starts, s.id)
			}
		}
	}
	var walk func(c *node)
	walk = func(c *node) {
		for _, n := range c.children {
			r.Nodes = append(r.Nodes, sdk.Node{ID: n.id, Name: n.name, Kind: n.tag, Line: n.line, Step: n.step,
				Type: n.taskType, Inputs: n.io.Inputs, Outputs: n.io.Outputs, Event: n.eventDef()})
			if n.k.isContainer() {
				walk(n)
			}
		}
	}
	for _, p := range m.procs {
		walk(p)
	}
	m.routine = r
}

// eventDef tells the host what fires n, when the host delivers it.
func (n *node) eventDef() *sdk.EventDef {
	var d *sdk.EventDef
	switch {
	case n.ev == evTimer:
		d = &sdk.EventDef{Type: sdk.EventTimer, Timer: n.timer}
	case n.ev == evMessage || n.k == kReceiveTask:
		d = &sdk.EventDef{Type: sdk.EventMessage, Name: n.key}
	case n.ev == evSignal:
		d = &sdk.EventDef{Type: sdk.EventSignal, Name: n.key}
	case n.ev == evConditional:
		d = &sdk.EventDef{Type: sdk.EventConditional, Condition: n.condition}
	default:
		return nil
	}
	d.Interrupting = n.attached != nil && n.interrupting
	return d
}

func (l *loader) executable(p *node) bool { return l.procExecutable[p.id] }

// exprNames fills in each expression's Names and Unknown: the variables it
// reads that the routine binds nowhere, and the functions FEEL lacks. The
// routine's own names are counted wherever they are bound (a
// flow-insensitive view: a local of one sub-process hides a typo of the
// same name elsewhere), so a check warns only about names nothing in the
// routine could give.
func (l *loader) exprNames() {
	bound := map[string]bool{"input": true, "vars": true, "strategy": true, "token": true}
	for _, n := range l.m.byID {
		for name := range n.locals {
			bound[name] = true
		}
		if mi := n.mi; mi != nil {
			bound[attrLoopCounter] = true
			bound[mi.element] = true
			bound[mi.outLocal] = true
			if mi.completion != nil {
				for _, name := range miCounters {
					bound[name] = true
				}
			}
		}
	}
	for i, c := range l.exprConds {
		if c == nil {
			continue
		}
		calls := c.x.Calls()
		var names []string
		for _, name := range c.x.Names() {
			if !bound[name] && !hasString(calls, name) {
				names = append(names, name)
			}
		}
		l.exprs[i].Names, l.exprs[i].Unknown = names, calls
	}
}
