package bpmn

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/sextant-dev/sextant/sdk"
)

// The engine runs one navigator call: it rebuilds the tokens of the state,
// runs a first-in first-out queue of small jobs (enter a node, leave it,
// cross a flow, fire an event) until nothing can move without the host,
// and returns the difference as a Decision.
//
// The job granularity follows bpmn-js-token-simulation: a node is entered
// in one job and left in a later one, and every sequence flow takes two
// jobs. The order matters where events race (a signal thrown while its
// catcher is still on its way), and where an interrupting event cancels
// work that is already queued: jobs of cancelled tokens are skipped.

// Token attributes the engine keeps in sdk.Token.Attrs.
const (
	attrFlow        = "flow"         // parked: the flow the token arrived on
	attrChoice      = "choice"       // waiting for the host to choose flows
	attrMI          = "mi"           // "body" or "instance"
	attrInterrupted = "interrupted"  // scope: an interrupting event sub-process ran
	attrMsgWait     = "msgwait"      // activity waiting for its incoming message
	attrTimers      = "timers"       // event id -> timer definition, for the host
	attrCorrelation = "correlations" // message event id -> correlation key, for the host
	attrLoopCounter = "loopCounter"
	attrMIItems     = "mi_items"
	attrMICount     = "mi_count"
	attrMINext      = "mi_next"
	attrMIOut       = "mi_out"
	attrMIDone      = "mi_done"
)

// maxJobs bounds the work of one call: a loop of immediate elements (no
// task, no wait state) would otherwise never return.
const maxJobs = 100000

// maxTokens bounds the tokens of one state, for the same reason.
const maxTokens = 10000

const (
	tkPlain tokKind = iota
	tkBody
	tkInstance
)

type op uint8

const (
	opEnter op = iota
	opExit
	opChosen // exit along the job's flows
	opFlowIn
	opFlowOut
	opSignal
	opComplete
	opFire      // deliver event node n to waiting token t (see jobAux)
	opMessage   // deliver a message to node n
	opStartInst // start a process instance at node n
	opCatchSub  // start event sub-process (start event n) in scope t
	opCatchBnd  // fire boundary event n on host t
	opCancel    // cancel the transaction of cancel end event t
)

// job is one queued step. It holds no pointer, so that queueing it writes
// nothing the garbage collector must see: t is the token's index in
// run.toks plus one (0: none), and aux, when not 0, is one plus the index
// in run.aux of the node and flows of the rarer jobs that need them.
type job struct {
	op  op
	t   int32
	aux int32
}

// jobAux is the node and flows of a job (see job).
type jobAux struct {
	n     *node
	flows []*flow
}

// run is the state of one call.
type run struct {
	m      *model
	nodes  []*node // m.nodes
	env    *sdk.Env
	in     []sdk.Token // the request's tokens: the ids of the original ones
	toks   []*tok
	seq    int64
	q      []job
	aux    []jobAux
	qh     int
	jobs   int
	trace  []traceKey // the call's trace (see trace.go)
	set    map[string]any
	fault  *sdk.Fault
	arena  []tok
	used   int
	envVal sdk.Env // a copy, so that the request does not escape
	sc     scope   // reused by every evaluation of the call

	waiting []uint32  // scratch for the decision: indexes of join nodes
	mem     answerMem // the memory decisions are carved from

	// root is the main process's token rebuilt for the tokens the state
	// holds at its top level without one (see implicitRoot), and implicit
	// the root the call's decision leaves out of the state, if any.
	root, implicit *tok
}

// arenaSize is how many tokens a pooled run holds without allocating.
const arenaSize = 32

// runPool recycles runs: most calls touch a handful of tokens and jobs,
// and allocating them afresh dominated the cost of a call.
var runPool = sync.Pool{New: func() any {
	return &run{toks: make([]*tok, 0, arenaSize), q: make([]job, 0, 64), arena: make([]tok, arenaSize), trace: make([]traceKey, 0, 64)}
}}

// release returns r to the pool. The decision built from r shares nothing
// with it: set is handed over and never reused, and the rest is copied into
// memory carved for the decision alone.
//
// It resets the fields one by one rather than assigning a fresh run: a
// struct copy with pointers runs the GC's write barrier over every pointer
// slot of the run while a collection is marking, which made release one of
// the costliest steps of a call.
//
// What the pooled run still points to (the last request's env and tokens,
// in envVal, sc and the arena) stays reachable until the next call
// overwrites it or a collection empties the pool; clearing it here would
// cost more barriers than it saves.
func (r *run) release() {
	if r.set != nil || r.fault != nil {
		r.set, r.fault = nil, nil
	}
	// One slice a statement: the compiler stores only the length of a
	// slice resliced into itself.
	r.toks = r.toks[:0]
	r.q = r.q[:0]
	r.waiting = r.waiting[:0]
	r.qh, r.jobs, r.used, r.seq = 0, 0, 0, 0
	if r.root != nil || r.implicit != nil {
		r.root, r.implicit = nil, nil
	}
	if len(r.aux) > 0 {
		clear(r.aux)
		r.aux = r.aux[:0]
	}
	runPool.Put(r)
}

// slot returns a new moving token of the run at n in scope, appended to
// r.toks.
func (r *run) slot(n *node, scope *tok) *tok {
	t := r.alloc()
	t.reset(n, stMoving, nil, nil)
	t.src, t.dirty = -1, true
	if t.scope != scope {
		t.scope = scope
	}
	return t
}

// alloc returns a token of the run, from the arena while it lasts,
// appended to r.toks; its fields are the last call's.
func (r *run) alloc() *tok {
	var t *tok
	if r.used < len(r.arena) {
		t = &r.arena[r.used]
		r.used++
	} else {
		t = new(tok)
	}
	ix := int32(len(r.toks))
	if k := len(r.toks); k < cap(r.toks) && r.toks[:k+1][k] == t {
		r.toks = r.toks[:k+1]
	} else {
		r.toks = append(r.toks, t)
	}
	t.ix = ix
	return t
}

// reset zeroes t's bits but its index, and sets its node, status,
// triggers and attributes (not its scope).
//
// It skips the stores of values t already holds. The run is pooled, and
// the next call most often puts a like token at the same slot (the
// process's scope token first, the same scope, no attributes): while a
// collection marks, every pointer stored pays the write barrier on the
// old value and the new, and a comparison costs nothing of the kind.
func (t *tok) reset(n *node, status tokStatus, triggers []string, attrs map[string]any) {
	ix := t.ix
	t.tokBits = tokBits{}
	t.ix, t.ni, t.status = ix, n.ix, status
	if !sameSlice(t.triggers, triggers) {
		t.triggers = triggers
	}
	if t.attrs != nil || attrs != nil {
		t.attrs = attrs
	}
}

// sameSlice reports whether a and b are the same slice of the same memory.
func sameSlice[T any](a, b []T) bool {
	return unsafe.SliceData(a) == unsafe.SliceData(b) && len(a) == len(b) && cap(a) == cap(b)
}

// setEnv makes the run's env a copy of e, storing only the fields that
// changed (see slot): calls on one instance carry the same maps.
func (r *run) setEnv(e *sdk.Env) {
	v := &r.envVal
	if !sameMap(v.Input, e.Input) {
		v.Input = e.Input
	}
	if !sameMap(v.Vars, e.Vars) {
		v.Vars = e.Vars
	}
	if !sameMap(v.Strategy, e.Strategy) {
		v.Strategy = e.Strategy
	}
	if v.Now != e.Now {
		v.Now = e.Now
	}
	if r.env != v {
		r.env = v
	}
}

// sameMap reports whether a and b are the same map (not merely equal ones).
func sameMap(a, b map[string]any) bool {
	return *(*unsafe.Pointer)(unsafe.Pointer(&a)) == *(*unsafe.Pointer)(unsafe.Pointer(&b))
}

// newRun rebuilds the engine tokens of st.
func newRun(m *model, st *sdk.State) (*run, error) {
	r := runPool.Get().(*run)
	r.setEnv(&st.Env)
	if r.m != m {
		r.m, r.nodes = m, m.nodes
	}
	r.seq = st.Seq
	r.trace = r.trace[:0]
	if !sameSlice(r.in, st.Tokens) {
		r.in = st.Tokens
	}
	for i := range st.Tokens {
		s := &st.Tokens[i]
		n := m.node(s.Node)
		if n == nil {
			r.release()
			return nil, sdk.Errorf(sdk.CodeInvalid, "token %s: node %q is not in routine %s", s.ID, s.Node, shortHash(m.hash))
		}
		if s.ID == "" {
			r.release()
			return nil, sdk.Errorf(sdk.CodeInvalid, "token at %q has no id", s.Node)
		}
		status, ok := restingStatus(s.Status)
		if !ok {
			// A token the host holds is at rest; one without a resting
			// status would end the call as a fault blaming the engine.
			r.release()
			return nil, sdk.Errorf(sdk.CodeInvalid, "token %s: unknown status %q", s.ID, s.Status)
		}
		// its scope is set below, once every token is there
		t := r.alloc()
		t.reset(n, status, s.Triggers, s.Attrs)
		t.src, t.orig = int32(i), true
		if s.Attempt != 0 || s.DelayMS != 0 {
			t.attempt, t.delay = s.Attempt, s.DelayMS
		}
		if len(t.attrs) > 0 && !r.parkedAttrs(t) {
			switch t.attrs[attrMI] {
			case "body":
				t.kind = tkBody
			case "instance":
				t.kind = tkInstance
			}
			if t.kind != tkPlain && n.mi == nil {
				r.release()
				return nil, sdk.Errorf(sdk.CodeInvalid, "token %s: %s is not a multi-instance activity", s.ID, n.elem())
			}
			if f, ok := t.attrs[attrFlow].(string); ok {
				if fl := m.flow(f); fl != nil {
					t.fl = fl.ix + 1
				}
			}
		}
	}
	var byID map[string]*tok
	if len(st.Tokens) > 16 {
		byID = make(map[string]*tok, len(st.Tokens))
		for i, t := range r.toks {
			byID[st.Tokens[i].ID] = t
		}
	}
	for i := range st.Tokens {
		s := &st.Tokens[i]
		if s.Scope == "" {
			// A token at the top level of the main process with no scope
			// belongs to its implicit token, rebuilt once for all of them.
			var sc *tok
			if r.nodes[r.toks[i].ni].parent == m.main {
				if r.root == nil {
					r.root = r.alloc()
					r.root.reset(m.main, stScope, nil, nil)
					r.root.src, r.root.scope = -1, nil
					if len(m.main.subTriggers) > 0 {
						// not a state this navigator writes: its process
						// token waits for its event sub-processes
						r.rest(r.root, stScope, m.main.subTriggers)
					}
				}
				sc = r.root
				sc.kids++
			}
			if r.toks[i].scope != sc {
				r.toks[i].scope = sc
			}
			continue
		}
		var sc *tok
		if byID != nil {
			sc = byID[s.Scope]
		} else {
			for j := range st.Tokens {
				if st.Tokens[j].ID == s.Scope {
					sc = r.toks[j]
					break
				}
			}
		}
		if sc == nil {
			r.release()
			return nil, sdk.Errorf(sdk.CodeInvalid, "token %s: scope %q is not a token of this state", s.ID, s.Scope)
		}
		if r.toks[i].scope != sc {
			r.toks[i].scope = sc
		}
		sc.kids++
	}
	for _, t := range r.toks {
		// Scopes nest: a token that is its own scope, at any depth,
		// would send every walk up the scopes round forever.
		s, depth := t.scope, 0
		for ; s != nil && depth <= len(r.toks); depth++ {
			s = s.scope
		}
		if s != nil {
			r.release()
			return nil, sdk.Errorf(sdk.CodeInvalid, "token %s: its scopes form a cycle", r.tid(t))
		}
	}
	return r, nil
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// find returns the live token with id.
func (r *run) find(id string) *tok {
	for _, t := range r.toks {
		if !t.dead && (t.orig || t.named) && r.tid(t) == id {
			return t
		}
	}
	return nil
}

// tid returns t's id: the request's for an original token, else the one
// it was named (see name), else "".
func (r *run) tid(t *tok) string {
	switch {
	case t.orig:
		return r.in[t.src].ID
	case !t.named:
		return ""
	case t.seq >= 0 && t.seq < int64(len(ids)):
		return ids[t.seq]
	}
	return t.name
}

// name gives new token t the next id, in creation order but for the
// tokens others must refer to within the call (see ensureID).
func (r *run) name(t *tok) {
	r.seq++
	t.seq, t.named = r.seq, true
	if r.seq < 0 || r.seq >= int64(len(ids)) {
		t.name = tokenID(r.seq)
	}
}

// node returns t's node.
func (r *run) node(t *tok) *node { return r.nodes[t.ni] }

// parkedAttrs reports whether t's attributes are the shared ones of a
// token parked after a flow (its flow only), and sets t's flow if so: a
// token waiting at a join holds them through every call until the join
// fires, and they need no lookup of the other attributes.
func (r *run) parkedAttrs(t *tok) bool {
	if t.fl == 0 {
		f, ok := t.attrs[attrFlow].(string)
		if !ok {
			return false
		}
		fl := r.m.flow(f)
		if fl == nil || !sameMap(t.attrs, fl.parked) {
			return false
		}
		t.fl = fl.ix + 1
		return true
	}
	return sameMap(t.attrs, r.m.flowList[t.fl-1].parked)
}

// flowOf returns the flow t crossed or arrived on, or nil.
func (r *run) flowOf(t *tok) *flow {
	if t.fl == 0 {
		return nil
	}
	return r.m.flowList[t.fl-1]
}

func (r *run) push(o op, t *tok) { r.q = append(r.q, job{op: o, t: t.ix + 1}) }

// pushN queues a job of t (nil: none) about node n, or along flows.
func (r *run) pushN(o op, t *tok, n *node, flows []*flow) {
	r.aux = append(r.aux, jobAux{n: n, flows: flows})
	j := job{op: o, aux: int32(len(r.aux))}
	if t != nil {
		j.t = t.ix + 1
	}
	r.q = append(r.q, j)
}

// jobTok returns the token of j, or nil.
func (r *run) jobTok(j job) *tok {
	if j.t == 0 {
		return nil
	}
	return r.toks[j.t-1]
}

// jobAux returns the node and flows of j.
func (r *run) jobAux(j job) jobAux {
	if j.aux == 0 {
		return jobAux{}
	}
	return r.aux[j.aux-1]
}

// newTok creates a moving token at n in scope.
func (r *run) newTok(n *node, scope *tok) *tok {
	t := r.slot(n, scope)
	if scope != nil {
		scope.kids++
	}
	if len(r.toks) > maxTokens {
		r.failf(n, "", "more than %d tokens in one instance (a loop that forks without waiting?)", maxTokens)
	}
	return t
}

// rest puts t to rest in a status the host sees.
func (r *run) rest(t *tok, status tokStatus, triggers []string) {
	t.status = status
	if !sameSlice(t.triggers, triggers) {
		t.triggers = triggers
	}
	t.dirty = true
	if len(triggers) == 0 {
		return
	}
	n := r.node(t)
	if n.timers != nil {
		if len(n.timerEvents) == 0 {
			t.setShared(n.timerAttrs, attrTimers)
		} else {
			t.setAttr(attrTimers, r.timers(t))
		}
	}
	if len(n.corrEvents) > 0 {
		t.setAttr(attrCorrelation, r.correlations(t))
	}
}

// kill ends t and everything inside it, without trace.
func (r *run) kill(t *tok) {
	if t.dead {
		return
	}
	t.dead = true
	if t.scope != nil {
		t.scope.kids--
	}
	if t.kids > 0 {
		r.killChildren(t)
	}
}

func (r *run) killChildren(s *tok) {
	for _, c := range r.toks {
		if s.kids == 0 {
			return
		}
		if c.scope == s && !c.dead {
			r.kill(c)
		}
	}
}

func (r *run) hasChildren(s *tok) bool { return s.kids > 0 }

// failf ends the run with a fault.
func (r *run) failf(n *node, code, format string, args ...any) {
	if r.fault != nil {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if n != nil {
		msg = n.elem() + ": " + msg
	}
	f := &sdk.Fault{Message: msg, Code: code}
	if n != nil {
		f.Node = n.id
	}
	r.fault = f
}

// finish runs the call to its end and returns its decision; r goes back
// to the pool.
func (r *run) finish() *sdk.Decision {
	r.settle()
	d := r.decision()
	r.release()
	return d
}

// settle runs jobs until nothing moves, then fires inclusive joins that
// can fire, until none can.
func (r *run) settle() {
	for {
		r.drain()
		if r.fault != nil || !r.inclusiveJoins() {
			return
		}
	}
}

// drain runs the queue. A job whose only work is to queue one more job
// (crossing a flow, a start signal) hands it back instead; when nothing
// else is queued, that job would run next anyway, so it runs at once
// without passing through the queue (every write into the queue pays the
// GC's write barrier while a collection marks).
func (r *run) drain() {
	for r.qh < len(r.q) && r.fault == nil {
		j := r.q[r.qh]
		r.qh++
		for {
			r.jobs++
			if r.jobs > maxJobs {
				n := r.jobAux(j).n
				if t := r.jobTok(j); t != nil {
					n = r.node(t)
				}
				r.failf(n, "", "the routine loops without reaching a task or a wait state (more than %d steps in one move)", maxJobs)
				return
			}
			next, ok := r.do(j)
			if !ok {
				break
			}
			if r.qh < len(r.q) || r.fault != nil {
				r.q = append(r.q, next)
				break
			}
			j = next
		}
	}
	r.q = r.q[:0]
	r.qh = 0
}

// do runs job j. When j's only follow-up is one more job, do returns it
// rather than queueing it (see drain).
func (r *run) do(j job) (job, bool) {
	t := r.jobTok(j)
	if t != nil && t.dead {
		return job{}, false
	}
	switch j.op {
	case opFlowIn:
		return job{op: opFlowOut, t: j.t}, true
	case opFlowOut:
		t.ni = r.m.flowList[t.fl-1].dst.ix
		return job{op: opEnter, t: j.t}, true
	case opSignal:
		return job{op: opExit, t: j.t}, true
	case opEnter:
		r.enter(t)
	case opExit:
		r.exit(t, nil, false)
	case opComplete:
		r.complete(t)
	case opCancel:
		r.cancel(t)
	default:
		r.doAux(j.op, t, r.jobAux(j))
	}
	return job{}, false
}

// doAux runs the jobs that carry a node or flows.
func (r *run) doAux(o op, t *tok, a jobAux) {
	switch o {
	case opChosen:
		r.exit(t, a.flows, true)
	case opFire:
		r.fire(t, a.n)
	case opMessage:
		r.message(a.n)
	case opStartInst:
		r.startInstance(a.n)
	case opCatchSub:
		if !a.n.interrupting || !t.interrupted() {
			r.fireEventSub(t, a.n)
		}
	case opCatchBnd:
		r.fireBoundary(t, a.n)
	}
}

// enter handles a token arriving at its node.
func (r *run) enter(t *tok) {
	n := r.node(t)
	r.emit(traceEnter, n)
	switch n.k {
	case kTask, kReceiveTask, kSubProcess, kCallActivity:
		if n.mi != nil && t.kind == tkPlain {
			r.startMI(t)
			return
		}
		r.activate(t)
	case kExclusive:
		r.gateway(t)
	case kInclusive:
		if len(n.in) > 1 {
			r.park(t)
			return
		}
		r.gateway(t)
	case kParallel:
		if len(n.in) > 1 {
			r.parallelJoin(t)
			return
		}
		r.push(opExit, t)
	case kEventGateway, kCatch:
		r.rest(t, stWaiting, n.waitTriggers)
	case kThrow:
		r.throwEvent(t)
	case kEnd:
		r.endEvent(t)
	default:
		r.push(opExit, t)
	}
}

// exit leaves t's node along flows (chosen) or along its outgoing flows.
func (r *run) exit(t *tok, flows []*flow, chosen bool) {
	n := r.node(t)
	if n.k == kEnd && n.ev == evCancel {
		r.cancelled(t) // the transaction's compensation finished
		return
	}
	r.emit(traceExit, n)
	if _, comp := t.attrs[attrCompFor]; comp {
		// a compensation handler or revived scope finished
		r.compDone(t)
		s := t.scope
		r.kill(t)
		r.tryComplete(s)
		return
	}
	if n.outMaps != nil && n.k != kTask {
		// tasks map their step's output in activityDone
		if r.outputs(t, nil); r.fault != nil {
			return
		}
	}
	if n.k.isActivity() && t.kind != tkInstance {
		r.record(t)
	}
	if !chosen {
		var ok bool
		if flows, ok = r.outgoing(t); !ok {
			return
		}
	}
	moved := false
	for _, f := range flows {
		nt := r.newTok(f.dst, t.scope)
		nt.fl = f.ix + 1
		r.push(opFlowIn, nt)
		moved = true
	}
	if n.k == kThrow && n.ev == evLink {
		for _, c := range n.parent.children {
			if c.k == kCatch && c.ev == evLink && c.key == n.key {
				r.push(opSignal, r.newTok(c, t.scope))
				moved = true
			}
		}
	}
	r.kill(t)
	if !moved {
		r.tryComplete(t.scope)
	}
}

// tryComplete completes scope s when nothing runs inside it any more.
func (r *run) tryComplete(s *tok) {
	if s == nil || s.dead || s.completing || r.hasChildren(s) {
		return
	}
	s.completing = true
	r.push(opComplete, s)
}

// complete finishes a scope whose inside has run to its end.
func (r *run) complete(s *tok) {
	s.completing = false
	if r.hasChildren(s) {
		return // an event started something inside meanwhile
	}
	n := r.node(s)
	switch {
	case s.kind == tkBody:
		r.push(opExit, s)
	case n.k == kProcess:
		c := s.scope
		r.kill(s)
		if c != nil {
			r.activityDone(c, nil)
		}
	case n.k == kEventSub:
		r.emit(traceExit, n)
		p := s.scope
		r.kill(s)
		r.tryComplete(p)
	case s.attr(attrCompFor) != nil:
		r.push(opExit, s) // a revived scope: back to its thrower
	default:
		r.activityDone(s, nil)
	}
}

// evalEnv is the expression scope at token t: the state's env, the local
// variables of t and its enclosing scopes, and extra. The scope is the
// run's own, valid until the next call.
func (r *run) evalEnv(t *tok, extra map[string]any) *scope {
	var attrs map[string]any
	for s := t; s != nil; s = s.scope {
		if s.kind == tkInstance {
			attrs = s.attrs
			break
		}
	}
	if attrs == nil && t != nil {
		attrs = t.attrs
	}
	r.sc = scope{env: r.env, token: attrs, at: t, run: r, extra: extra}
	return &r.sc
}

// nextVars is a copy of the process variables with room for n more, for
// setting some that expressions see at once (useVars); it makes r.set, the variables the call set, if
// need be.
func (r *run) nextVars(n int) map[string]any {
	if r.set == nil {
		r.set = make(map[string]any, n)
	}
	merged := make(map[string]any, len(r.env.Vars)+n)
	for k, v := range r.env.Vars {
		merged[k] = v
	}
	return merged
}

// useVars makes vars (from nextVars) the process variables for the rest
// of the call; the env the call was given is left as it was.
func (r *run) useVars(vars map[string]any) {
	env := *r.env
	env.Vars = vars
	r.envVal = env
	r.env = &r.envVal
}
