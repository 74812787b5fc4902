package bpmn

import "github.com/sextant-dev/sextant/sdk"

// decisionBuf holds a decision and room for its usual slices, so that a
// typical call allocates its answer once.
type decisionBuf struct {
	d     sdk.Decision
	trace [8]sdk.Event
	rm    [2]string
	add   [2]sdk.Token
}

// decision turns the run into the delta the host applies.
func (r *run) decision() *sdk.Decision {
	if r.buf == nil {
		r.buf = new(decisionBuf)
	}
	buf := r.buf
	d := &buf.d
	d.Trace, d.Set = r.trace, r.set
	r.seal()
	if r.fault != nil {
		d.Fault = r.fault
	}
	r.reserve(buf)
	live := 0
	var waiting []string
	for _, t := range r.toks {
		if t.dead {
			if t.orig {
				d.Remove = append(d.Remove, t.id)
			}
			continue
		}
		live++
		if t.status == sdk.Parked && !hasString(waiting, t.n.id) {
			waiting = append(waiting, t.n.id)
		}
		if d.Choice == nil && t.attr(attrChoice) != nil {
			d.Choice = r.choice(t)
		}
		if !t.orig || t.dirty {
			d.Add = append(d.Add, r.token(t))
		}
	}
	d.Waiting = waiting
	d.Seq = r.seq
	d.Complete = live == 0 && r.fault == nil
	return d
}

// seal ends the moves of the call: a token still moving is a fault, a
// fault ends every token, and new resting tokens get their ids, in
// creation order.
func (r *run) seal() {
	for _, t := range r.toks {
		if !t.dead && t.status == "" && r.fault == nil {
			// A token that never came to rest is an engine bug; surface it
			// rather than hand the host a state it cannot read.
			r.failf(t.n, "", "internal error: the token did not come to rest")
		}
	}
	if r.fault != nil {
		for _, t := range r.toks {
			t.dead = true
		}
	}
	for _, t := range r.toks {
		if t.dead || t.id != "" {
			continue
		}
		r.seq++
		t.id = tokenID(r.seq)
	}
}

// reserve gives the decision in buf room for its added and removed
// tokens: buf's own arrays when they are large enough.
func (r *run) reserve(buf *decisionBuf) {
	d := &buf.d
	adds, removes := 0, 0
	for _, t := range r.toks {
		switch {
		case t.dead && t.orig:
			removes++
		case !t.dead && (!t.orig || t.dirty):
			adds++
		}
	}
	switch {
	case adds > len(buf.add):
		d.Add = make([]sdk.Token, 0, adds)
	case adds > 0:
		d.Add = buf.add[:0:adds]
	}
	switch {
	case removes > len(buf.rm):
		d.Remove = make([]string, 0, removes)
	case removes > 0:
		d.Remove = buf.rm[:0:removes]
	}
}

func (r *run) choice(t *tok) *sdk.Choice {
	c := &sdk.Choice{Token: t.id, Node: t.n.id, Multi: t.n.k == kInclusive}
	for _, f := range t.n.out {
		c.Flows = append(c.Flows, sdk.Flow{ID: f.id, Target: f.dst.id})
	}
	return c
}

func (r *run) token(t *tok) sdk.Token {
	st := sdk.Token{ID: t.id, Node: t.n.id, Status: t.status, Triggers: t.triggers, Attempt: t.attempt, DelayMS: t.delay}
	if t.scope != nil {
		st.Scope = t.scope.id
	}
	if len(t.attrs) > 0 {
		st.Attrs = t.attrs
	}
	return st
}
