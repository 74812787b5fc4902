package bpmn

import "slices"

// check validates the structure of container c and everything inside it.
func (l *loader) check(c *node) {
	linkCatches := map[string]bool{}
	for _, n := range c.children {
		if n.k == kCatch && n.ev == evLink {
			linkCatches[n.key] = true
		}
	}
	for _, n := range c.children {
		l.checkNode(n, c, linkCatches)
		if n.k.isContainer() {
			l.check(n)
		}
	}
	for _, n := range c.children {
		switch n.k {
		case kStart:
			c.allStarts = append(c.allStarts, n)
			if n.ev == evNone {
				c.starts = append(c.starts, n)
			}
		case kEventSub:
			c.eventSubs = append(c.eventSubs, n)
		}
	}
}

// checkNode validates n, a node of container c: first what its family
// allows (event definitions, flows), then what holds for every node
// (compensation), then what its outgoing flows must be. The order is the
// order of problems on one line.
func (l *loader) checkNode(n, c *node, linkCatches map[string]bool) {
	switch n.k {
	case kStart:
		l.checkStart(n, c)
	case kEnd:
		l.checkEnd(n, c)
	case kThrow:
		l.checkThrow(n, c, linkCatches)
	case kCatch:
		l.checkCatch(n, c)
	case kBoundary:
		l.checkBoundary(n, c)
	default:
		if n.ev != evNone {
			l.bad(n, "unexpected %s event definition", n.ev)
		}
	}
	l.checkCompensation(n, c)
	switch n.k {
	case kExclusive, kInclusive, kParallel, kEventGateway:
		l.checkGateway(n)
	case kEventSub:
		l.checkEventSub(n)
	}
}

// bad records a problem with node n at its line.
func (l *loader) bad(n *node, format string, args ...any) {
	l.problem(n.line, n.elem(), format, args...)
}

// checkEventDef reports an event definition of n (in container c) that
// its kind does not allow there.
func (l *loader) checkEventDef(n, c *node, allowed ...evKind) {
	if n.badDef || slices.Contains(allowed, n.ev) {
		return
	}
	where := ""
	if n.k == kStart {
		switch c.k {
		case kEventSub:
			where = " in an event sub-process"
		case kSubProcess:
			where = " in a sub-process"
		}
	}
	if n.ev == evNone {
		l.bad(n, "needs an event definition here")
	} else {
		l.bad(n, "%s %s%s is not supported", n.ev, n.tag, where)
	}
}

// checkStart validates start event n of container c; a compensation start
// event makes c its scope's compensation event sub-process.
func (l *loader) checkStart(n, c *node) {
	switch c.k {
	case kProcess:
		l.checkEventDef(n, c, evNone, evMessage, evTimer, evSignal, evConditional)
	case kEventSub:
		l.checkEventDef(n, c, evMessage, evTimer, evSignal, evConditional, evError, evEscalation, evCompensate)
		if n.ev == evCompensate {
			if c.compStart != nil {
				l.bad(n, "an event sub-process has one compensation start event")
			}
			c.compStart = n
			if c.parent.compSub != nil && c.parent.compSub != c {
				l.bad(n, "a scope has one compensation event sub-process")
			}
			c.parent.compSub = c
		}
		if n.ev == evError && !n.interrupting {
			l.bad(n, "error start events always interrupt (remove isInterrupting=\"false\")")
		}
	default:
		l.checkEventDef(n, c, evNone)
	}
	if len(n.in) > 0 {
		l.bad(n, "start events cannot have incoming sequence flows")
	}
}

// checkEnd validates end event n of container c.
func (l *loader) checkEnd(n, c *node) {
	l.checkEventDef(n, c, evNone, evTerminate, evError, evEscalation, evSignal, evMessage, evCompensate, evCancel)
	if n.ev == evCancel {
		switch {
		case c.tag != "transaction":
			l.bad(n, "cancel end events are only allowed inside a transaction")
		case findBoundary(c, evCancel, "") == nil:
			l.bad(n, "%s has no cancel boundary event to catch the cancellation", c.elem())
		}
	}
	if len(n.out) > 0 {
		l.bad(n, "end events cannot have outgoing sequence flows")
	}
}

// checkThrow validates intermediate throw event n; a link throw needs a
// catch of its name in the same scope.
func (l *loader) checkThrow(n, c *node, linkCatches map[string]bool) {
	l.checkEventDef(n, c, evNone, evSignal, evEscalation, evMessage, evLink, evCompensate)
	if n.ev == evLink && !linkCatches[n.key] {
		l.bad(n, "no link catch event named %q in the same scope", n.key)
	}
}

// checkCatch validates intermediate catch event n.
func (l *loader) checkCatch(n, c *node) {
	l.checkEventDef(n, c, evNone, evMessage, evTimer, evSignal, evLink, evConditional)
	if n.ev == evLink && len(n.in) > 0 {
		l.bad(n, "link catch events cannot have incoming sequence flows")
	}
}

// checkBoundary validates boundary event n; a compensation boundary event
// marks its activity as compensable.
func (l *loader) checkBoundary(n, c *node) {
	l.checkEventDef(n, c, evNone, evMessage, evTimer, evSignal, evError, evEscalation, evConditional, evCompensate, evCancel)
	if n.ev == evCancel && n.attached != nil && n.attached.tag != "transaction" {
		l.bad(n, "cancel boundary events attach to transactions, not to %s", n.attached.elem())
	}
	if n.ev == evCompensate {
		if len(n.out) > 0 {
			l.bad(n, "compensation boundary events cannot have outgoing sequence flows (associate the handler instead)")
		}
		if n.attached != nil {
			n.attached.compBound = true
		}
	}
	if len(n.in) > 0 {
		l.bad(n, "boundary events cannot have incoming sequence flows")
	}
	if n.ev == evError && !n.interrupting {
		l.bad(n, "error boundary events always interrupt (remove cancelActivity=\"false\")")
	}
}

// checkCompensation validates what compensation asks of any node: a
// handler has no sequence flows, and a compensation throw names an
// activity of its scope (an event sub-process compensates its parent's).
func (l *loader) checkCompensation(n, c *node) {
	if n.forComp && (len(n.in) > 0 || len(n.out) > 0) {
		l.bad(n, "compensation handlers cannot have sequence flows")
	}
	if n.ev == evCompensate && n.compRef != nil && (n.k == kThrow || n.k == kEnd) {
		scope := c
		for scope.k == kEventSub && n.compRef.parent != scope {
			scope = scope.parent
		}
		if n.compRef.parent != scope {
			l.bad(n, "activityRef %q is not an activity of this scope", n.compRef.id)
		}
	}
}

// checkGateway validates the outgoing flows of gateway n and collects the
// targets of an event-based gateway.
func (l *loader) checkGateway(n *node) {
	// A parallel gateway without outgoing flows is a join that ends (an
	// implicit end); a deciding gateway without one is a mistake.
	if n.k != kParallel && len(n.out) == 0 {
		l.bad(n, "no outgoing sequence flow")
	}
	if n.k == kParallel || n.k == kEventGateway {
		for _, f := range n.out {
			if f.cond != nil {
				l.problem(f.line, f.elem(), "flows leaving a %s cannot have conditions", n.tag)
			}
		}
	}
	if n.k != kEventGateway {
		return
	}
	for _, f := range n.out {
		t := f.dst
		ok := t.k == kReceiveTask || (t.k == kCatch && t.ev != evLink)
		if !ok {
			l.problem(f.line, f.elem(), "an eventBasedGateway may only lead to intermediate catch events or receive tasks, not to %s", t.elem())
			continue
		}
		n.targets = append(n.targets, t)
	}
}

// checkEventSub validates event sub-process n: no flows, no boundary
// events, a start event.
func (l *loader) checkEventSub(n *node) {
	if len(n.in) > 0 || len(n.out) > 0 {
		l.bad(n, "event sub-processes cannot have sequence flows")
	}
	if len(n.boundaries) > 0 {
		l.bad(n, "event sub-processes cannot have boundary events")
	}
	starts := 0
	for _, s := range n.children {
		if s.k == kStart {
			starts++
		}
	}
	if starts == 0 {
		l.bad(n, "event sub-process needs a start event")
	}
}
