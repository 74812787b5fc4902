package bpmn

import (
	"fmt"

	"github.com/sextant-dev/sextant/sdk"
)

// park rests a token at a join gateway.
func (r *run) park(t *tok) {
	if f := r.flowOf(t); f != nil {
		t.setShared(f.parked, attrFlow)
	}
	r.rest(t, stParked, nil)
}

// parallelJoin fires a parallel join when every incoming flow holds a
// token (the arriving one included); else the arriving token parks.
func (r *run) parallelJoin(t *tok) {
	n := r.node(t)
	var small [8]*tok
	pick := small[:0]
	if len(n.in) > len(small) {
		pick = make([]*tok, 0, len(n.in))
	}
	pick = pick[:len(n.in)]
	for i, f := range n.in {
		if f.ix+1 == t.fl {
			pick[i] = t
			break
		}
	}
	r.parked(pick, n, t.scope)
	for _, p := range pick {
		if p == nil {
			r.park(t)
			return
		}
	}
	for _, p := range pick {
		r.kill(p)
	}
	r.push(opExit, r.newTok(n, t.scope))
}

// parked fills the empty slots of pick, one per incoming flow of join n,
// with the tokens parked at n in scope: the first on each flow.
func (r *run) parked(pick []*tok, n *node, scope *tok) {
	for _, p := range r.toks {
		if p.dead || p.ni != n.ix || p.status != stParked || p.scope != scope {
			continue
		}
		for i, f := range n.in {
			if f.ix+1 == p.fl && pick[i] == nil {
				pick[i] = p
				break
			}
		}
	}
}

// inclusiveJoins fires the first inclusive join that can fire; it reports
// whether one did.
func (r *run) inclusiveJoins() bool {
	for _, t := range r.toks {
		if t.dead || t.status != stParked || r.node(t).k != kInclusive {
			continue
		}
		if pick := r.inclusiveReady(r.node(t), t.scope); pick != nil {
			for _, p := range pick {
				if p != nil {
					r.kill(p)
				}
			}
			r.gateway(r.newTok(r.node(t), t.scope))
			return true
		}
	}
	return false
}

// inclusiveReady returns the tokens to consume (one per flow that holds
// one) when the join at n in scope can fire: every incoming flow holds a
// token, or no other token of the scope can still reach an empty one.
func (r *run) inclusiveReady(n *node, scope *tok) []*tok {
	pick := make([]*tok, len(n.in))
	r.parked(pick, n, scope)
	any := false
	for _, p := range pick {
		if p != nil {
			any = true
		}
	}
	if !any {
		return nil
	}
	for i, p := range pick {
		if p != nil {
			continue
		}
		up := n.upstream[i]
		for _, o := range r.toks {
			if o.dead || o.scope != scope || (o.ni == n.ix && o.status == stParked) {
				continue
			}
			if up[r.node(o)] {
				return nil
			}
		}
	}
	return pick
}

// gateway decides where an exclusive or inclusive gateway goes.
func (r *run) gateway(t *tok) {
	n := r.node(t)
	if !anyCond(n.out) {
		if len(n.out) == 1 {
			r.pushN(opChosen, t, nil, n.out)
			return
		}
		t.setShared(choiceAttrs, attrChoice)
		r.rest(t, stWaiting, nil)
		return
	}
	env := r.evalEnv(t, nil)
	var taken []*flow
	for _, f := range n.out {
		if f == n.def {
			continue
		}
		ok := true
		if f.cond != nil {
			var err error
			ok, err = f.cond.test(env)
			if err != nil {
				r.condFault(n, f, err)
				return
			}
		}
		if ok {
			taken = append(taken, f)
			if n.k == kExclusive {
				break
			}
		}
	}
	if len(taken) == 0 {
		if n.def == nil {
			r.failf(n, "", "no outgoing sequence flow condition is true and there is no default flow")
			return
		}
		taken = []*flow{n.def}
	}
	r.pushN(opChosen, t, nil, taken)
}

// outgoing selects the flows a non-gateway node leaves by: every flow
// without a condition and every flow whose condition holds; the default
// flow when no other is taken.
func (r *run) outgoing(t *tok) ([]*flow, bool) {
	n := r.node(t)
	if !anyCond(n.out) && n.def == nil {
		return n.out, true
	}
	var env *scope
	var taken []*flow
	for _, f := range n.out {
		if f == n.def {
			continue
		}
		if f.cond != nil {
			if env == nil {
				env = r.evalEnv(t, nil)
			}
			ok, err := f.cond.test(env)
			if err != nil {
				r.condFault(n, f, err)
				return nil, false
			}
			if !ok {
				continue
			}
		}
		taken = append(taken, f)
	}
	if len(taken) == 0 && n.def != nil {
		taken = []*flow{n.def}
	}
	if len(taken) == 0 && len(n.out) > 0 {
		r.failf(n, "", "no outgoing sequence flow condition is true and there is no default flow")
		return nil, false
	}
	return taken, true
}

// anyCond reports whether one of flows has a condition.
func anyCond(flows []*flow) bool {
	for _, f := range flows {
		if f.cond != nil {
			return true
		}
	}
	return false
}

// condFault ends the run because the condition of flow f, leaving n,
// could not be decided (an incident in Zeebe). The message starts with
// the flow's position in the routine: FILE:LINE: sequenceFlow "f": ...
func (r *run) condFault(n *node, f *flow, err error) {
	if r.fault != nil {
		return
	}
	r.fault = &sdk.Fault{Node: n.id, Message: fmt.Sprintf("%s:%d: %s (leaving %s): %v", r.m.file, f.line, f.elem(), n.elem(), err)}
}
