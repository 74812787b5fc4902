package bpmn

import "slices"

// precompute fills the derived fields the engine reads on every call.
func (l *loader) precompute() {
	// Walk in document order so that precomputed slices are deterministic.
	var walk func(c *node)
	walk = func(c *node) {
		for _, n := range c.children {
			l.nodeTriggers(n)
			if n.k.isContainer() {
				walk(n)
			}
		}
		l.containerTriggers(c)
		for _, n := range c.children {
			if implicitStart(n) {
				c.implicit = append(c.implicit, n)
			}
		}
		for _, n := range c.children {
			if n.k == kInclusive && len(n.in) > 1 {
				n.upstream = make([]map[*node]bool, len(n.in))
				for i, f := range n.in {
					n.upstream[i] = upstreamOf(c, f.src)
				}
			}
		}
	}
	for _, p := range l.m.procs {
		walk(p)
		for _, s := range p.allStarts {
			if s.ev == evSignal {
				l.m.signalStarts = append(l.m.signalStarts, s)
			}
		}
	}
}

// implicitStart reports whether n starts with its container because no
// sequence flow leads to it (BPMN's implicit start, as token simulation does).
func implicitStart(n *node) bool {
	if len(n.in) > 0 {
		return false
	}
	if n.forComp {
		return false
	}
	switch n.k {
	case kStart, kBoundary, kEventSub:
		return false
	case kCatch:
		return n.ev != evLink
	}
	return true
}

// nodeTriggers precomputes the triggers of a token resting at n.
func (l *loader) nodeTriggers(n *node) {
	var own []string
	switch n.k {
	case kReceiveTask, kCatch:
		own = append(own, n.id)
	case kTask:
		if n.msgIn {
			own = append(own, n.id)
		}
	}
	var bs []string
	for _, b := range n.boundaries {
		if b.ev.external() {
			bs = append(bs, b.id)
			if b.ev == evTimer {
				addTimer(n, b)
			}
		}
	}
	if n.k == kCatch && n.ev == evTimer {
		addTimer(n, n)
	}
	for _, b := range n.boundaries {
		l.addCorrelation(n, b)
	}
	if n.k == kCatch || n.k == kReceiveTask {
		l.addCorrelation(n, n)
	}
	n.waitTriggers = slices.Clip(append(own, bs...))
	n.hostTriggers = slices.Clip(bs)
	if n.k == kEventGateway {
		n.waitTriggers = nil
		for _, t := range n.targets {
			n.waitTriggers = append(n.waitTriggers, t.id)
			if t.ev == evTimer {
				addTimer(n, t)
			}
			l.addCorrelation(n, t)
		}
	}
}

// addCorrelation notes that a token resting at n subscribes to message
// event ev whose message has a correlation key: the key is evaluated for
// the host when the token starts waiting.
func (l *loader) addCorrelation(n, ev *node) {
	if ev.msgRef == "" || (ev.ev != evMessage && ev.k != kReceiveTask) {
		return
	}
	c := l.msgKeys[ev.msgRef]
	if c == nil {
		return
	}
	ev.corrKey = c
	for _, e := range n.corrEvents {
		if e == ev {
			return
		}
	}
	n.corrEvents = append(n.corrEvents, ev)
}

func addTimer(n, ev *node) {
	if ev.timer == "" {
		return
	}
	if n.timers == nil {
		n.timers = map[string]string{}
		n.timerAttrs = map[string]any{attrTimers: n.timers}
	}
	n.timers[ev.id] = ev.timer
	if ev.timerExpr != nil {
		n.timerEvents = append(n.timerEvents, ev)
	}
}

// containerTriggers precomputes the triggers of a scope token of c.
func (l *loader) containerTriggers(c *node) {
	var subs []string
	for _, es := range c.eventSubs {
		for _, s := range es.children {
			if s.k == kStart && s.ev.external() {
				subs = append(subs, s.id)
				if s.ev == evTimer {
					addTimer(c, s)
				}
				l.addCorrelation(c, s)
			}
		}
	}
	c.subTriggers = slices.Clip(subs)
	c.scopeTriggers = slices.Clip(append(append([]string(nil), c.hostTriggers...), subs...))
}

// upstreamOf returns the nodes of container c from which a token can
// reach target: along sequence flows, from an activity through its boundary
// events, and from link throw events to their catch events.
func upstreamOf(c *node, target *node) map[*node]bool {
	seen := map[*node]bool{target: true}
	stack := []*node{target}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		var preds []*node
		for _, f := range n.in {
			preds = append(preds, f.src)
		}
		if n.k == kBoundary && n.attached != nil {
			preds = append(preds, n.attached)
		}
		if n.k == kCatch && n.ev == evLink {
			for _, t := range c.children {
				if t.k == kThrow && t.ev == evLink && t.key == n.key {
					preds = append(preds, t)
				}
			}
		}
		for _, p := range preds {
			if !seen[p] {
				seen[p] = true
				stack = append(stack, p)
			}
		}
	}
	return seen
}
