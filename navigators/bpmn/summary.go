package bpmn

import "github.com/sextant-dev/sextant/sdk"

// summary builds the sdk.Routine.
func (l *loader) summary() {
	m := l.m
	// The main process: the first executable one that a none start event
	// starts, else the first with a none start event, else the first.
	for _, p := range m.procs {
		if len(p.starts) > 0 && l.executable(p) {
			m.main = p
			break
		}
	}
	if m.main == nil {
		for _, p := range m.procs {
			if len(p.starts) > 0 {
				m.main = p
				break
			}
		}
	}
	if m.main == nil {
		m.main = m.procs[0]
	}
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
