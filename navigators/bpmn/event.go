package bpmn

import (
	"fmt"
	"strconv"

	"github.com/sextant-dev/sextant/navigators/feel"
)

// Events. What the routine throws runs inside the call: a signal reaches
// every token waiting for it (broadcast), an error or an escalation climbs
// the scopes to its first catcher (raise), a message follows its message
// flow (message). What the host delivers through Boundary (timers,
// messages, signals, conditions) fires the same way (fire).

// throwEvent runs intermediate throw event r.node(t): its messages, then the
// signal, escalation or compensation it throws.
func (r *run) throwEvent(t *tok) {
	n := r.node(t)
	r.sendMessages(n)
	switch n.ev {
	case evCompensate:
		r.compensateThrow(t)
		return
	case evSignal:
		r.broadcast(n.key)
	case evEscalation:
		r.raise(t, evEscalation, n.key)
	}
	r.push(opExit, t)
}

// endEvent runs end event r.node(t): its messages, then what it throws. A
// terminate end event ends its scope; an error nothing catches is a fault.
func (r *run) endEvent(t *tok) {
	n := r.node(t)
	r.sendMessages(n)
	switch n.ev {
	case evCompensate:
		r.compensateThrow(t)
		return
	case evCancel:
		// queued, like the catch of an error: work already on its
		// way arrives before the transaction is cancelled
		r.push(opCancel, t)
		return
	case evTerminate:
		s := t.scope
		r.kill(t)
		if s != nil {
			r.killChildren(s)
			r.tryComplete(s)
		}
		return
	case evError:
		if !r.raise(t, evError, n.key) {
			r.failf(n, n.key, "%s was not caught", describeError(n.key))
			return
		}
	case evEscalation:
		r.raise(t, evEscalation, n.key)
	case evSignal:
		r.broadcast(n.key)
	}
	r.push(opExit, t)
}

func describeError(code string) string {
	if code == "" {
		return "error"
	}
	return fmt.Sprintf("error %q", code)
}

// isHost reports whether boundary events of t's node are attached to t.
func (r *run) isHost(t *tok) bool {
	return t.kind != tkInstance && len(r.node(t).boundaries) > 0 && r.node(t).k != kProcess
}

// containerOf returns the container whose event sub-processes scope s
// holds, or nil.
func (r *run) containerOf(s *tok) *node {
	if s.status != stScope || s.kind == tkBody || !r.node(s).k.isContainer() {
		return nil
	}
	return r.node(s)
}

// raise throws an error or escalation from t up the scopes: the first
// event sub-process start or boundary event that catches it fires. It
// reports whether one did.
func (r *run) raise(t *tok, ev evKind, key string) bool {
	s := t
	if !r.isHost(t) {
		s = t.scope
	}
	for ; s != nil; s = s.scope {
		if c := r.containerOf(s); c != nil && !s.interrupted() {
			if st := findSubStart(c, ev, key); st != nil {
				r.pushN(opCatchSub, s, st, nil)
				return true
			}
		}
		if r.isHost(s) && s.status != stMoving {
			if b := findBoundary(r.node(s), ev, key); b != nil {
				r.pushN(opCatchBnd, s, b, nil)
				return true
			}
		}
	}
	return false
}

// findSubStart finds the event sub-process start of c catching ev with
// key: one naming key first, then a catch-all.
func findSubStart(c *node, ev evKind, key string) *node {
	var all *node
	for _, es := range c.eventSubs {
		for _, s := range es.children {
			if s.k == kStart && catches(s, ev, key, &all) {
				return s
			}
		}
	}
	return all
}

// findBoundary finds the boundary event of activity a catching ev with
// key: one naming key first, then a catch-all.
func findBoundary(a *node, ev evKind, key string) *node {
	var all *node
	for _, b := range a.boundaries {
		if catches(b, ev, key, &all) {
			return b
		}
	}
	return all
}

// catches reports whether catch event c names the ev with key it catches;
// the first catch-all for ev it meets goes to *all.
func catches(c *node, ev evKind, key string, all **node) bool {
	if c.ev != ev {
		return false
	}
	if c.hasRef && c.key == key {
		return true
	}
	if !c.hasRef && *all == nil {
		*all = c
	}
	return false
}

// broadcast delivers a signal to everything waiting for it when it is
// thrown: catch events, event-based gateways, boundary events, event
// sub-process starts, and signal start events (new instances).
func (r *run) broadcast(key string) {
	live := len(r.toks)
	for _, w := range r.toks[:live] {
		if w.dead || w.status == stMoving {
			continue
		}
		if w.status == stWaiting {
			switch r.node(w).k {
			case kCatch:
				if r.node(w).ev == evSignal && r.node(w).key == key {
					r.pushN(opFire, w, r.node(w), nil)
					continue
				}
			case kEventGateway:
				for _, tg := range r.node(w).targets {
					if tg.ev == evSignal && tg.key == key {
						r.pushN(opFire, w, tg, nil)
						break
					}
				}
				continue
			}
		}
		r.subscriptions(w, evSignal, key)
	}
	for _, s := range r.m.signalStarts {
		if s.key == key {
			r.pushN(opStartInst, nil, s, nil)
		}
	}
}

// subscriptions fires the event sub-process starts and boundary events of
// w that match a signal: an interrupting one alone (event sub-processes
// first), else every non-interrupting one.
func (r *run) subscriptions(w *tok, ev evKind, key string) {
	var subs, bnds []*node
	if c := r.containerOf(w); c != nil && !w.interrupted() {
		for _, es := range c.eventSubs {
			for _, s := range es.children {
				if s.k == kStart && s.ev == ev && s.key == key {
					subs = append(subs, s)
				}
			}
		}
	}
	if r.isHost(w) {
		for _, b := range r.node(w).boundaries {
			if b.ev == ev && b.key == key {
				bnds = append(bnds, b)
			}
		}
	}
	for _, s := range subs {
		if s.interrupting {
			r.pushN(opCatchSub, w, s, nil)
			return
		}
	}
	for _, b := range bnds {
		if b.interrupting {
			r.pushN(opCatchBnd, w, b, nil)
			return
		}
	}
	for _, s := range subs {
		r.pushN(opCatchSub, w, s, nil)
	}
	for _, b := range bnds {
		r.pushN(opCatchBnd, w, b, nil)
	}
}

// sendMessages queues the messages of n's outgoing message flows.
func (r *run) sendMessages(n *node) {
	for _, tg := range n.msgOut {
		r.pushN(opMessage, nil, tg, nil)
	}
}

// message delivers a message to node tg: the oldest token waiting for it,
// else a new instance when tg is a start event; otherwise it is lost.
func (r *run) message(tg *node) {
	for _, w := range r.toks {
		if w.dead || w.status == stMoving {
			continue
		}
		switch {
		case tg.k == kBoundary && w.ni == tg.attached.ix && r.isHost(w):
			r.fireBoundary(w, tg)
			return
		case tg.k == kStart && tg.parent.k == kEventSub && r.containerOf(w) == tg.parent.parent:
			if tg.interrupting && w.interrupted() {
				continue
			}
			r.fireEventSub(w, tg)
			return
		case w.status == stWaiting && w.ni == tg.ix && hasString(w.triggers, tg.id):
			r.fire(w, tg)
			return
		case w.status == stWaiting && r.node(w).k == kEventGateway && hasNode(r.node(w).targets, tg):
			r.fire(w, tg)
			return
		}
	}
	if tg.k == kStart && tg.parent.k == kProcess {
		r.startInstance(tg)
	}
}

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func hasNode(list []*node, n *node) bool {
	for _, x := range list {
		if x == n {
			return true
		}
	}
	return false
}

// fire delivers event ev to token w, which waits for it.
func (r *run) fire(w *tok, ev *node) {
	switch {
	case ev.k == kBoundary:
		r.fireBoundary(w, ev)
	case ev.k == kStart && ev.parent.k == kEventSub:
		if ev.interrupting && w.interrupted() {
			return
		}
		r.fireEventSub(w, ev)
	case r.node(w).k == kEventGateway:
		s := w.scope
		r.kill(w)
		r.push(opSignal, r.newTok(ev, s))
	case ev == r.node(w) && r.node(w).k == kTask && w.attr(attrMsgWait) != nil:
		// the message arrived: now the host runs the task (the navigator
		// a script task)
		if r.node(w).script != nil {
			r.runScript(w)
			break
		}
		if r.node(w).decision != nil {
			r.runDecision(w)
			break
		}
		r.rest(w, stReady, r.hostTriggers(w))
	case ev == r.node(w) && r.node(w).k == kReceiveTask:
		r.activityDone(w, nil)
	case ev == r.node(w):
		r.push(opSignal, w)
	}
}

// fireBoundary fires boundary event b of host h.
func (r *run) fireBoundary(h *tok, b *node) {
	if b.interrupting {
		r.killChildren(h)
		r.emit(traceExit, r.node(h))
		r.kill(h)
	}
	r.push(opSignal, r.newTok(b, h.scope))
}

// fireEventSub starts event sub-process of start event st in scope s.
func (r *run) fireEventSub(s *tok, st *node) {
	es := st.parent
	if st.interrupting {
		r.killChildren(s)
		s.setAttr(attrInterrupted, true)
		var host []string
		if s.kind == tkPlain && r.node(s).k == kSubProcess {
			host = r.node(s).hostTriggers
		}
		r.rest(s, stScope, host)
	}
	sub := r.newTok(es, s)
	r.rest(sub, stScope, es.subTriggers)
	r.push(opSignal, r.newTok(st, sub))
	for _, n := range es.implicit {
		r.push(opEnter, r.newTok(n, sub))
	}
}

// startInstance starts an instance of the process of start node s (a
// start event, or a node without incoming flow in a process without start
// events).
func (r *run) startInstance(s *node) {
	p := s.proc
	inst := r.newTok(p, nil)
	r.rest(inst, stScope, p.subTriggers)
	if s.k == kStart {
		r.push(opSignal, r.newTok(s, inst))
	}
	for _, n := range p.implicit {
		r.push(opEnter, r.newTok(n, inst))
	}
}

// correlations evaluates the correlation keys of the message events t
// subscribes to, for the host: the key as text, or {"error": why} when
// it is not a string or a number (Zeebe raises an incident there).
func (r *run) correlations(t *tok) map[string]any {
	out := make(map[string]any, len(r.node(t).corrEvents))
	for _, ev := range r.node(t).corrEvents {
		v, err := ev.corrKey.eval(r.evalEnv(t, nil))
		if n, ok := v.(feel.Number); ok {
			out[ev.id] = n.String()
			continue
		}
		switch x := plain(v).(type) {
		case string:
			out[ev.id] = x
		case float64:
			out[ev.id] = strconv.FormatFloat(x, 'f', -1, 64)
		default:
			if err == nil {
				err = fmt.Errorf("gave %s, want a string or a number", feel.Format(v))
			}
			out[ev.id] = map[string]any{"error": fmt.Sprintf("correlationKey %q: %v", ev.corrKey.src, err)}
		}
	}
	return out
}

// timers evaluates the expression timers of t's node for the host, as in
// "timeDuration PT5M"; a value that fails stays as written, with the error.
func (r *run) timers(t *tok) map[string]string {
	out := make(map[string]string, len(r.node(t).timers))
	for k, v := range r.node(t).timers {
		out[k] = v
	}
	for _, ev := range r.node(t).timerEvents {
		v, err := ev.timerExpr.eval(r.evalEnv(t, nil))
		if err == nil && v == nil {
			err = fmt.Errorf("gave null")
		}
		if err != nil {
			out[ev.id] = ev.timer + " (" + err.Error() + ")"
			continue
		}
		out[ev.id] = ev.timerKind + " " + timerText(v)
	}
	return out
}
