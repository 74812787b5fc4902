package bpmn

import (
	"slices"
	"unsafe"

	"github.com/sextant-dev/sextant/sdk"
)

// answerMem hands out the memory of answers: fresh arrays, carved in
// exact sizes and never handed out twice, so no call writes memory another
// decision holds, and nothing of the run that built it. (What answers do
// share is read-only memory of the routine: see trace.go.) Carving from
// chunks makes most calls allocate nothing of their own; the price is that
// an answer the caller keeps also keeps the rest of its chunks alive (a few
// kilobytes at most). It lives in the pooled run: what is left of a chunk
// serves the next calls.
type answerMem struct {
	decisions chunk[sdk.Decision]
	events    chunk[sdk.Event]
	tokens    chunk[sdk.Token]
	strings   chunk[string]
}

// chunk is an array answers are carved from, and how much of it is
// carved. Carving only counts, so that it stores no pointer (and pays no
// write barrier) but when it takes a new array.
type chunk[T any] struct {
	buf  []T
	used int
}

// Chunk sizes, in elements: as many as fit in one of the runtime's size
// classes (6912, 3072, 6912 and 512 bytes), so that little of a chunk is
// rounding, and classes whose spans hold several chunks (7, 8, 7, 16), so
// that the allocator fetches a new span rarely. A request for more than
// half a chunk gets its own array, so that one large answer does not waste
// most of a chunk.
const (
	chunkDecisions = 6912 / int(unsafe.Sizeof(sdk.Decision{}))
	chunkEvents    = 3072 / int(unsafe.Sizeof(sdk.Event{}))
	chunkTokens    = 6912 / int(unsafe.Sizeof(sdk.Token{}))
	chunkStrings   = 512 / int(unsafe.Sizeof(""))
)

// carve returns n fresh elements of c (of a new array of size elements
// when fewer are left) with no room to append.
func carve[T any](c *chunk[T], n, size int) []T {
	if n > size/2 {
		return make([]T, n)
	}
	if n > len(c.buf)-c.used {
		c.buf, c.used = make([]T, size), 0
	}
	out := c.buf[c.used : c.used+n : c.used+n]
	c.used += n
	return out
}

// oneID returns a slice holding just id: a view of the token ids table
// (ids) when id is one of them, else carved.
func (m *answerMem) oneID(id string) []string {
	if len(id) > 1 && id[0] == 't' {
		k := 0
		for i := 1; i < len(id) && k < len(ids); i++ {
			if id[i] < '0' || id[i] > '9' {
				k = len(ids)
				break
			}
			k = k*10 + int(id[i]-'0')
		}
		if k < len(ids) && ids[k] == id {
			return ids[k : k+1 : k+1]
		}
	}
	out := carve(&m.strings, 1, chunkStrings)
	out[0] = id
	return out
}

func (m *answerMem) decision() *sdk.Decision {
	return &carve(&m.decisions, 1, chunkDecisions)[0]
}

// decision turns the run into the delta the host applies. Everything it
// holds is fresh memory (answerMem) or shared with the model and the
// request, never the run's scratch.
func (r *run) decision() *sdk.Decision {
	r.seal()
	adds, dirty, removes, live := 0, 0, 0, 0
	r.waiting = r.waiting[:0]
	for _, t := range r.toks {
		if t.dead {
			if t.orig {
				removes++
			}
			continue
		}
		if t == r.implicit {
			continue
		}
		if t.orig && !t.dirty && t.scope != nil && t.scope == r.root && r.root != r.implicit {
			// The state holds t at the top level, and its process token
			// is explicit now: t must name it.
			t.dirty = true
		}
		live++
		if !t.orig || t.dirty {
			adds++
		}
		if t.orig && t.dirty {
			dirty++
		}
		if t.status == stParked && !slices.Contains(r.waiting, t.ni) {
			r.waiting = append(r.waiting, t.ni)
		}
	}
	mem := &r.mem
	d := mem.decision()
	// The decision's memory is zeroed: storing nil pointers would only
	// feed the GC's write barrier.
	if r.set != nil {
		d.Set = r.set
	}
	if r.fault != nil {
		d.Fault = r.fault
	}
	d.Seq = r.seq
	d.Complete = live == 0 && r.fault == nil
	if len(r.trace) > 0 {
		d.Trace = r.m.trace(r.trace, mem)
	}
	switch ids := r.m.idList; len(r.waiting) {
	case 0:
	case 1:
		i := r.waiting[0]
		d.Waiting = ids[i : i+1 : i+1]
	default:
		d.Waiting = carve(&mem.strings, len(r.waiting), chunkStrings)
		for j, i := range r.waiting {
			d.Waiting[j] = ids[i]
		}
	}
	if removes > 1 {
		d.Remove = carve(&mem.strings, removes, chunkStrings)[:0]
	}
	// Applied to the request's state, the decision leaves exactly the live
	// tokens: the host's Apply builds them in room.
	var room []sdk.Token
	if live > 0 {
		room = carve(&mem.tokens, live, chunkTokens)
	}
	switch {
	case adds > 0 && dirty == 0:
		// Every added token is new, so Apply appends them all after the
		// tokens the state keeps: write them there, once.
		d.Add = room[live-adds : live-adds : live]
	case adds > 0:
		d.Add = carve(&mem.tokens, adds, chunkTokens)[:0]
	}
	for _, t := range r.toks {
		if t.dead {
			if t.orig {
				if removes == 1 {
					d.Remove = mem.oneID(r.tid(t))
				} else {
					d.Remove = append(d.Remove, r.tid(t))
				}
			}
			continue
		}
		if t == r.implicit {
			continue
		}
		if d.Choice == nil && len(t.attrs) > 0 && !r.parkedAttrs(t) && t.attr(attrChoice) != nil {
			d.Choice = r.choice(t)
		}
		if !t.orig || t.dirty {
			d.Add = d.Add[:len(d.Add)+1]
			r.token(&d.Add[len(d.Add)-1], t)
		}
	}
	if live > 0 {
		d.ReserveApply(room)
	}
	return d
}

// seal ends the moves of the call: a token still moving is a fault, a
// fault ends every token, and new resting tokens get their ids, in
// creation order.
func (r *run) seal() {
	for _, t := range r.toks {
		if !t.dead && t.status == stMoving && r.fault == nil {
			// A token that never came to rest is an engine bug; surface it
			// rather than hand the host a state it cannot read.
			r.failf(r.node(t), "", "internal error: the token did not come to rest")
		}
	}
	if r.fault != nil {
		for _, t := range r.toks {
			t.dead = true
		}
	}
	r.implicit = r.implicitRoot()
	for _, t := range r.toks {
		// A root rebuilt by newRun that stays implicit takes no id; one
		// the call made is named in its order all the same, so that the
		// ids of the others do not depend on it.
		if t.dead || t.orig || t.named || t == r.implicit && t == r.root {
			continue
		}
		r.name(t)
	}
}

// implicitRoot returns the token of the main process when the decision
// may leave it out of the state: when it is the only token at the top, new
// (a state that lists it keeps it: its tokens name it), and holds nothing
// (no triggers, attributes, or retry). The tokens at the top level of the
// process then have no scope, and newRun rebuilds it.
func (r *run) implicitRoot() *tok {
	var top *tok
	for _, t := range r.toks {
		if t.dead || t.scope != nil {
			continue
		}
		if top != nil {
			return nil
		}
		top = t
	}
	if top == nil || top.orig || top.status != stScope || top.kind != tkPlain || r.nodes[top.ni] != r.m.main ||
		len(top.attrs) > 0 || len(top.triggers) > 0 || top.attempt != 0 || top.delay != 0 {
		return nil
	}
	return top
}

func (r *run) choice(t *tok) *sdk.Choice {
	c := &sdk.Choice{Token: r.tid(t), Node: r.node(t).id, Multi: r.node(t).k == kInclusive}
	for _, f := range r.node(t).out {
		c.Flows = append(c.Flows, sdk.Flow{ID: f.id, Target: f.dst.id})
	}
	return c
}

// token writes t into st, fresh (zeroed) memory of the answer, one field
// at a time: only the fields t sets, and no whole-struct copy, which would
// go through the runtime's bulk write barrier while a collection marks.
func (r *run) token(st *sdk.Token, t *tok) {
	st.ID, st.Node, st.Status = r.tid(t), r.m.idList[t.ni], statuses[t.status]
	if t.triggers != nil {
		st.Triggers = t.triggers
	}
	st.Attempt, st.DelayMS = t.attempt, t.delay
	if t.scope != nil && t.scope != r.implicit {
		st.Scope = r.tid(t.scope)
	}
	if len(t.attrs) > 0 {
		st.Attrs = t.attrs
	}
}
