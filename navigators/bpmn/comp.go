package bpmn

// Compensation. When an activity that can be compensated completes, a
// record of it is added to its scope token (Attrs.comp): an activity with a
// compensation boundary event, or a sub-process with a compensation event
// sub-process or with records of its own (kept inside its record). A
// compensation throw or end event takes the records of the activity it
// names (or all of them, latest first) from its scope and runs, for each:
// the activity's compensation handler, and for a sub-process a revived scope
// that runs its compensation event sub-process, or else compensates its own
// records. The thrower waits until all of that has finished. Records are
// taken once: compensating twice does nothing the second time. Records die
// with their scope, so a sub-process that failed is not compensated.

const (
	attrComp     = "comp"     // scope: compensation records, latest last
	attrCompFor  = "compfor"  // handler or revived scope: the waiting thrower ("" for none)
	attrCompWait = "compwait" // thrower: how many compensations it waits for
)

// record adds a compensation record for completed activity t to its scope.
func (r *run) record(t *tok) {
	n := r.node(t)
	var inner []any
	if n.k == kSubProcess && t.kind != tkBody {
		inner, _ = t.attr(attrComp).([]any)
	}
	if !n.compBound && n.compSub == nil && len(inner) == 0 {
		return
	}
	s := t.scope
	if s == nil {
		return
	}
	old, _ := s.attr(attrComp).([]any)
	recs := make([]any, len(old), len(old)+1)
	copy(recs, old)
	rec := map[string]any{"node": n.id}
	if len(inner) > 0 {
		rec["inner"] = inner
	}
	s.setAttr(attrComp, append(recs, rec))
}

// take removes the records of activity a (all records when a is nil) from
// scope s and returns them latest first.
func take(s *tok, a *node) []map[string]any {
	recs, _ := s.attr(attrComp).([]any)
	var out []map[string]any
	var keep []any
	for i := len(recs) - 1; i >= 0; i-- {
		rec, _ := recs[i].(map[string]any)
		if rec == nil {
			continue
		}
		if a == nil || rec["node"] == a.id {
			out = append(out, rec)
		} else {
			keep = append([]any{rec}, keep...)
		}
	}
	if len(out) > 0 {
		if len(keep) == 0 {
			s.delAttr(attrComp)
		} else {
			s.setAttr(attrComp, keep)
		}
	}
	return out
}

// ensureID names t now, for tokens that others refer to within the call.
func (r *run) ensureID(t *tok) {
	if !t.orig && !t.named {
		r.name(t)
	}
}

// compensateThrow handles a compensation intermediate throw or end event.
func (r *run) compensateThrow(t *tok) {
	n := r.node(t)
	// The records live in the thrower's scope; a thrower inside an event
	// sub-process compensates the scope the event sub-process runs in.
	s := t.scope
	var recs []map[string]any
	for s != nil {
		recs = take(s, n.compRef)
		if len(recs) > 0 || r.node(s).k != kEventSub {
			break
		}
		s = s.scope
	}
	waiter := ""
	if !n.compNoWait {
		r.ensureID(t)
		waiter = r.tid(t)
	}
	count := 0
	for _, rec := range recs {
		count += r.compensate(rec, s, waiter)
	}
	if count == 0 || n.compNoWait {
		r.push(opExit, t)
		return
	}
	t.setAttr(attrCompWait, count)
	r.rest(t, stWaiting, nil)
}

// compensate runs the compensation of one record in scope s and returns
// how many completions the waiter will be told of.
func (r *run) compensate(rec map[string]any, s *tok, waiter string) int {
	id, _ := rec["node"].(string)
	a := r.m.byID[id]
	if a == nil {
		return 0
	}
	count := 0
	if h := a.compHandler; h != nil {
		ht := r.newTok(h, s)
		ht.setAttr(attrCompFor, waiter)
		r.push(opEnter, ht)
		count++
	}
	if a.k != kSubProcess {
		return count
	}
	inner, _ := rec["inner"].([]any)
	if a.compSub == nil && (a.compHandler != nil || len(inner) == 0) {
		return count
	}
	// Revive the sub-process to compensate what ran inside it.
	ns := r.newTok(a, s)
	r.rest(ns, stScope, nil)
	ns.setAttr(attrCompFor, waiter)
	count++
	if a.compSub != nil {
		if len(inner) > 0 {
			ns.setAttr(attrComp, inner)
		}
		r.fireEventSub(ns, a.compSub.compStart)
		return count
	}
	spawned := 0
	for i := len(inner) - 1; i >= 0; i-- {
		if sub, ok := inner[i].(map[string]any); ok {
			spawned += r.compensate(sub, ns, "")
		}
	}
	if spawned == 0 {
		r.tryComplete(ns)
	}
	return count
}

// compDone tells the thrower waiting for a finished compensation handler or
// revived scope.
func (r *run) compDone(t *tok) {
	id, _ := t.attr(attrCompFor).(string)
	if id == "" {
		return
	}
	w := r.find(id)
	if w == nil {
		return
	}
	left, _ := toInt(w.attr(attrCompWait))
	left--
	if left > 0 {
		w.setAttr(attrCompWait, left)
		return
	}
	w.delAttr(attrCompWait)
	r.push(opExit, w)
}

// cancel handles a cancel end event: the transaction's other work stops,
// everything it completed is compensated, then its cancel boundary event
// fires.
func (r *run) cancel(t *tok) {
	s := t.scope
	if s == nil {
		r.cancelled(t) // a state with the token outside any scope
		return
	}
	for _, c := range r.toks {
		if c != t && c.scope == s && !c.dead {
			r.kill(c)
		}
	}
	recs := take(s, nil)
	r.ensureID(t)
	count := 0
	for _, rec := range recs {
		count += r.compensate(rec, s, r.tid(t))
	}
	if count == 0 {
		r.cancelled(t)
		return
	}
	t.setAttr(attrCompWait, count)
	r.rest(t, stWaiting, nil)
}

// cancelled fires the cancel boundary event of the transaction t ends.
func (r *run) cancelled(t *tok) {
	s := t.scope
	if s == nil || !r.isHost(s) {
		r.failf(r.node(t), "", "cancelled outside a transaction")
		return
	}
	b := findBoundary(r.node(s), evCancel, "")
	if b == nil {
		r.failf(r.node(t), "", "%s has no cancel boundary event", r.node(s).elem())
		return
	}
	r.fireBoundary(s, b)
}
