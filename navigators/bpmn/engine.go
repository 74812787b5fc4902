package bpmn

import (
	"fmt"
	"strconv"
	"sync"

	"github.com/sextant-dev/sextant/navigators/feel"
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

type tokKind uint8

const (
	tkPlain tokKind = iota
	tkBody
	tkInstance
)

// tok is the engine's view of one token.
type tok struct {
	id       string
	n        *node
	status   sdk.TokenStatus // "" while moving
	scope    *tok
	flow     *flow // flow crossed, or arrived on
	triggers []string
	attrs    map[string]any
	ownAttrs bool // attrs is a private copy
	attempt  int
	delay    int64
	kind     tokKind
	kids     int // live tokens whose scope this is

	dead, orig, dirty, completing bool
}

func (t *tok) attr(k string) any {
	if t.attrs == nil {
		return nil
	}
	return t.attrs[k]
}

// setAttr sets an attribute, copying attrs first if they are shared with
// the caller's state.
func (t *tok) setAttr(k string, v any) {
	if !t.ownAttrs {
		m := make(map[string]any, len(t.attrs)+1)
		for kk, vv := range t.attrs {
			m[kk] = vv
		}
		t.attrs = m
		t.ownAttrs = true
	}
	t.attrs[k] = v
	t.dirty = true
}

// setShared sets one attribute; a token without attributes takes shared,
// an immutable map holding just that attribute, instead of a new map.
func (t *tok) setShared(shared map[string]any, k string) {
	if len(t.attrs) == 0 {
		t.attrs, t.ownAttrs, t.dirty = shared, false, true
		return
	}
	t.setAttr(k, shared[k])
}

// choiceAttrs marks a token waiting for the host to choose (shared).
var choiceAttrs = map[string]any{attrChoice: true}

func (t *tok) delAttr(k string) {
	if _, ok := t.attrs[k]; !ok {
		return
	}
	t.setAttr(k, nil)
	delete(t.attrs, k)
}

func (t *tok) interrupted() bool { b, _ := t.attr(attrInterrupted).(bool); return b }

type op uint8

const (
	opEnter op = iota
	opExit
	opChosen // exit along job.flows
	opFlowIn
	opFlowOut
	opSignal
	opComplete
	opFire      // deliver event job.n to waiting token job.t
	opMessage   // deliver a message to node job.n
	opStartInst // start a process instance at job.n
	opCatchSub  // start event sub-process (start event job.n) in scope job.t
	opCatchBnd  // fire boundary event job.n on host job.t
	opCancel    // cancel the transaction of cancel end event job.t
)

type job struct {
	op    op
	t     *tok
	n     *node
	flows []*flow
}

// run is the state of one call.
type run struct {
	m      *model
	env    *sdk.Env
	toks   []*tok
	seq    int64
	q      []job
	qh     int
	jobs   int
	trace  []sdk.Event
	set    map[string]any
	fault  *sdk.Fault
	arena  []tok
	used   int
	buf    *decisionBuf
	envVal sdk.Env // a copy, so that the request does not escape
	sc     scope   // reused by every evaluation of the call
}

// arenaSize is how many tokens a pooled run holds without allocating.
const arenaSize = 32

// runPool recycles runs: most calls touch a handful of tokens and jobs,
// and allocating them afresh dominated the cost of a call.
var runPool = sync.Pool{New: func() any {
	return &run{toks: make([]*tok, 0, arenaSize), q: make([]job, 0, 64), arena: make([]tok, arenaSize)}
}}

// release returns r to the pool. The decision built from r must not share
// anything with it (trace and set are handed over, never reused).
func (r *run) release() {
	*r = run{toks: r.toks[:0], q: r.q[:0], arena: r.arena}
	r.env = &r.envVal
	runPool.Put(r)
}

// alloc returns a zeroed token, from the arena while it lasts.
func (r *run) alloc() *tok {
	if r.used < len(r.arena) {
		t := &r.arena[r.used]
		*t = tok{}
		r.used++
		return t
	}
	return &tok{}
}

// newRun rebuilds the engine tokens of st.
func newRun(m *model, st *sdk.State) (*run, error) {
	r := runPool.Get().(*run)
	r.envVal = st.Env
	r.m, r.env, r.seq = m, &r.envVal, st.Seq
	for i := range st.Tokens {
		s := &st.Tokens[i]
		n := m.byID[s.Node]
		if n == nil {
			r.release()
			return nil, sdk.Errorf(sdk.CodeInvalid, "token %s: node %q is not in routine %s", s.ID, s.Node, shortHash(m.hash))
		}
		if s.ID == "" {
			r.release()
			return nil, sdk.Errorf(sdk.CodeInvalid, "token at %q has no id", s.Node)
		}
		t := r.alloc()
		*t = tok{id: s.ID, n: n, status: s.Status, triggers: s.Triggers, attrs: s.Attrs, attempt: s.Attempt, delay: s.DelayMS, orig: true}
		if len(t.attrs) > 0 {
			switch t.attrs[attrMI] {
			case "body":
				t.kind = tkBody
			case "instance":
				t.kind = tkInstance
			}
			if f, ok := t.attrs[attrFlow].(string); ok {
				t.flow = m.flows[f]
			}
		}
		r.toks = append(r.toks, t)
	}
	var byID map[string]*tok
	if len(st.Tokens) > 16 {
		byID = make(map[string]*tok, len(st.Tokens))
		for _, t := range r.toks {
			byID[t.id] = t
		}
	}
	for i := range st.Tokens {
		s := &st.Tokens[i]
		if s.Scope == "" {
			continue
		}
		var sc *tok
		if byID != nil {
			sc = byID[s.Scope]
		} else {
			for _, t := range r.toks {
				if t.id == s.Scope {
					sc = t
					break
				}
			}
		}
		if sc == nil {
			r.release()
			return nil, sdk.Errorf(sdk.CodeInvalid, "token %s: scope %q is not a token of this state", s.ID, s.Scope)
		}
		r.toks[i].scope = sc
		sc.kids++
	}
	return r, nil
}

// ids holds the first token ids, so that naming a token allocates nothing.
var ids = func() []string {
	out := make([]string, 1024)
	for i := range out {
		out[i] = "t" + strconv.Itoa(i)
	}
	return out
}()

func tokenID(seq int64) string {
	if seq >= 0 && seq < int64(len(ids)) {
		return ids[seq]
	}
	return "t" + strconv.FormatInt(seq, 10)
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
		if t.id == id && !t.dead {
			return t
		}
	}
	return nil
}

func (r *run) push(o op, t *tok) { r.q = append(r.q, job{op: o, t: t}) }

func (r *run) pushN(o op, t *tok, n *node) { r.q = append(r.q, job{op: o, t: t, n: n}) }

func (r *run) emit(typ sdk.EventType, n *node) {
	if r.trace == nil {
		r.buf = new(decisionBuf)
		r.trace = r.buf.trace[:0]
	}
	r.trace = append(r.trace, sdk.Event{Type: typ, Node: n.id})
}

// decisionBuf holds a decision and room for its usual slices, so that a
// typical call allocates its answer once.
type decisionBuf struct {
	d     sdk.Decision
	trace [8]sdk.Event
	rm    [2]string
	add   [2]sdk.Token
}

// newTok creates a moving token at n in scope.
func (r *run) newTok(n *node, scope *tok) *tok {
	t := r.alloc()
	t.n, t.scope, t.dirty = n, scope, true
	if scope != nil {
		scope.kids++
	}
	r.toks = append(r.toks, t)
	if len(r.toks) > maxTokens {
		r.failf(n, "", "more than %d tokens in one instance (a loop that forks without waiting?)", maxTokens)
	}
	return t
}

// rest puts t to rest in a status the host sees.
func (r *run) rest(t *tok, status sdk.TokenStatus, triggers []string) {
	t.status = status
	t.triggers = triggers
	t.dirty = true
	if t.n.timers != nil && len(triggers) > 0 {
		if len(t.n.timerEvents) == 0 {
			t.setShared(t.n.timerAttrs, attrTimers)
		} else {
			t.setAttr(attrTimers, r.timers(t))
		}
	}
	if len(t.n.corrEvents) > 0 && len(triggers) > 0 {
		t.setAttr(attrCorrelation, r.correlations(t))
	}
}

// correlations evaluates the correlation keys of the message events t
// subscribes to, for the host: the key as text, or {"error": why} when
// it is not a string or a number (Zeebe raises an incident there).
func (r *run) correlations(t *tok) map[string]any {
	out := make(map[string]any, len(t.n.corrEvents))
	for _, ev := range t.n.corrEvents {
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
	out := make(map[string]string, len(t.n.timers))
	for k, v := range t.n.timers {
		out[k] = v
	}
	for _, ev := range t.n.timerEvents {
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

func (r *run) drain() {
	for r.qh < len(r.q) && r.fault == nil {
		j := r.q[r.qh]
		r.qh++
		r.jobs++
		if r.jobs > maxJobs {
			n := j.n
			if j.t != nil {
				n = j.t.n
			}
			r.failf(n, "", "the routine loops without reaching a task or a wait state (more than %d steps in one move)", maxJobs)
			return
		}
		r.do(j)
	}
	r.q = r.q[:0]
	r.qh = 0
}

func (r *run) do(j job) {
	t := j.t
	if t != nil && t.dead {
		return
	}
	switch j.op {
	case opEnter:
		r.enter(t)
	case opExit:
		r.exit(t, nil, false)
	case opChosen:
		r.exit(t, j.flows, true)
	case opFlowIn:
		r.push(opFlowOut, t)
	case opFlowOut:
		t.n = t.flow.dst
		r.push(opEnter, t)
	case opSignal:
		r.push(opExit, t)
	case opComplete:
		r.complete(t)
	case opFire:
		r.fire(t, j.n)
	case opMessage:
		r.message(j.n)
	case opStartInst:
		r.startInstance(j.n)
	case opCatchSub:
		if j.n.interrupting && t.interrupted() {
			return
		}
		r.fireEventSub(t, j.n)
	case opCatchBnd:
		r.fireBoundary(t, j.n)
	case opCancel:
		r.cancel(t)
	}
}

// enter handles a token arriving at its node.
func (r *run) enter(t *tok) {
	n := t.n
	r.emit(sdk.Enter, n)
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
	case kEventGateway:
		r.rest(t, sdk.Waiting, n.waitTriggers)
	case kCatch:
		r.rest(t, sdk.Waiting, n.waitTriggers)
	case kThrow:
		r.sendMessages(n)
		if n.ev == evCompensate {
			r.compensateThrow(t)
			return
		}
		switch n.ev {
		case evSignal:
			r.broadcast(n.key)
		case evEscalation:
			r.raise(t, evEscalation, n.key)
		}
		r.push(opExit, t)
	case kEnd:
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
	default:
		r.push(opExit, t)
	}
}

func describeError(code string) string {
	if code == "" {
		return "error"
	}
	return fmt.Sprintf("error %q", code)
}

// activate starts the work of an activity token (a plain one, or one
// multi-instance instance).
func (r *run) activate(t *tok) {
	n := t.n
	host := n.hostTriggers
	if t.kind == tkInstance {
		host = nil
	}
	switch n.k {
	case kTask:
		if (n.headers != nil || n.inMaps != nil) && !r.inputs(t) {
			return
		}
		if n.msgIn && t.attr(attrMsgWait) == nil {
			t.setAttr(attrMsgWait, true)
			trig := n.waitTriggers
			if t.kind == tkInstance {
				trig = []string{n.id}
			}
			r.rest(t, sdk.Waiting, trig)
			return
		}
		r.rest(t, sdk.Ready, host)
	case kReceiveTask:
		trig := n.waitTriggers
		if t.kind == tkInstance {
			trig = []string{n.id}
		}
		r.rest(t, sdk.Waiting, trig)
	case kSubProcess:
		trig := n.scopeTriggers
		if t.kind == tkInstance {
			trig = n.subTriggers
		}
		r.rest(t, sdk.Scope, trig)
		started := false
		for _, s := range n.starts {
			r.push(opSignal, r.newTok(s, t))
			started = true
		}
		for _, s := range n.implicit {
			r.push(opEnter, r.newTok(s, t))
			started = true
		}
		if !started {
			r.tryComplete(t)
		}
	case kCallActivity:
		r.rest(t, sdk.Scope, host)
		p := n.called
		if len(p.starts) == 0 && len(p.implicit) == 0 {
			r.failf(n, "", "called process %q has no none start event", p.id)
			return
		}
		inst := r.newTok(p, t)
		r.rest(inst, sdk.Scope, p.subTriggers)
		if len(p.starts) > 0 {
			r.push(opSignal, r.newTok(p.starts[0], inst))
		}
		for _, s := range p.implicit {
			r.push(opEnter, r.newTok(s, inst))
		}
	}
}

// park rests a token at a join gateway.
func (r *run) park(t *tok) {
	if t.flow != nil {
		t.setShared(t.flow.parked, attrFlow)
	}
	r.rest(t, sdk.Parked, nil)
}

// parallelJoin fires a parallel join when every incoming flow holds a
// token (the arriving one included); else the arriving token parks.
func (r *run) parallelJoin(t *tok) {
	n := t.n
	var small [8]*tok
	pick := small[:0]
	if len(n.in) > len(small) {
		pick = make([]*tok, 0, len(n.in))
	}
	pick = pick[:len(n.in)]
	for i, f := range n.in {
		if f == t.flow {
			pick[i] = t
			break
		}
	}
	for _, p := range r.toks {
		if p.dead || p == t || p.n != n || p.status != sdk.Parked || p.scope != t.scope || p.flow == nil {
			continue
		}
		for i, f := range n.in {
			if f == p.flow && pick[i] == nil {
				pick[i] = p
				break
			}
		}
	}
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

// inclusiveJoins fires the first inclusive join that can fire; it reports
// whether one did.
func (r *run) inclusiveJoins() bool {
	for _, t := range r.toks {
		if t.dead || t.status != sdk.Parked || t.n.k != kInclusive {
			continue
		}
		if pick := r.inclusiveReady(t.n, t.scope); pick != nil {
			for _, p := range pick {
				if p != nil {
					r.kill(p)
				}
			}
			r.gateway(r.newTok(t.n, t.scope))
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
	for _, p := range r.toks {
		if p.dead || p.n != n || p.status != sdk.Parked || p.scope != scope {
			continue
		}
		for i, f := range n.in {
			if f == p.flow && pick[i] == nil {
				pick[i] = p
				break
			}
		}
	}
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
			if o.dead || o.scope != scope || (o.n == n && o.status == sdk.Parked) {
				continue
			}
			if up[o.n] {
				return nil
			}
		}
	}
	return pick
}

// gateway decides where an exclusive or inclusive gateway goes.
func (r *run) gateway(t *tok) {
	n := t.n
	conds := false
	for _, f := range n.out {
		if f.cond != nil {
			conds = true
			break
		}
	}
	if !conds {
		if len(n.out) == 1 {
			r.q = append(r.q, job{op: opChosen, t: t, flows: n.out})
			return
		}
		t.setShared(choiceAttrs, attrChoice)
		r.rest(t, sdk.Waiting, nil)
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
				r.failf(n, "", "condition of sequence flow %q: %v", f.id, err)
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
	r.q = append(r.q, job{op: opChosen, t: t, flows: taken})
}

// outgoing selects the flows a non-gateway node leaves by: every flow
// without a condition and every flow whose condition holds; the default
// flow when no other is taken.
func (r *run) outgoing(t *tok) ([]*flow, bool) {
	n := t.n
	conds := false
	for _, f := range n.out {
		if f.cond != nil {
			conds = true
			break
		}
	}
	if !conds && n.def == nil {
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
				r.failf(n, "", "condition of sequence flow %q: %v", f.id, err)
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

// exit leaves t's node along flows (chosen) or along its outgoing flows.
func (r *run) exit(t *tok, flows []*flow, chosen bool) {
	n := t.n
	if n.k == kEnd && n.ev == evCancel {
		r.cancelled(t) // the transaction's compensation finished
		return
	}
	r.emit(sdk.Exit, n)
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
		nt.flow = f
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
	switch {
	case s.kind == tkBody:
		r.push(opExit, s)
	case s.n.k == kProcess:
		c := s.scope
		r.kill(s)
		if c != nil {
			r.activityDone(c, nil)
		}
	case s.n.k == kEventSub:
		r.emit(sdk.Exit, s.n)
		p := s.scope
		r.kill(s)
		r.tryComplete(p)
	case s.attr(attrCompFor) != nil:
		r.push(opExit, s) // a revived scope: back to its thrower
	default:
		r.activityDone(s, nil)
	}
}

// activityDone continues after an activity completed normally.
func (r *run) activityDone(t *tok, output map[string]any) {
	if t.n.k == kTask {
		if r.outputs(t, output); r.fault != nil {
			return
		}
	}
	if t.kind == tkInstance {
		r.instanceDone(t, output)
		return
	}
	r.sendMessages(t.n)
	r.push(opExit, t)
}

// isHost reports whether boundary events of t's node are attached to t.
func isHost(t *tok) bool {
	return t.kind != tkInstance && len(t.n.boundaries) > 0 && t.n.k != kProcess
}

// containerOf returns the container whose event sub-processes scope s
// holds, or nil.
func containerOf(s *tok) *node {
	if s.status != sdk.Scope || s.kind == tkBody || !s.n.k.isContainer() {
		return nil
	}
	return s.n
}

// raise throws an error or escalation from t up the scopes: the first
// event sub-process start or boundary event that catches it fires. It
// reports whether one did.
func (r *run) raise(t *tok, ev evKind, key string) bool {
	s := t
	if !isHost(t) {
		s = t.scope
	}
	for ; s != nil; s = s.scope {
		if c := containerOf(s); c != nil && !s.interrupted() {
			if st := findSubStart(c, ev, key); st != nil {
				r.pushN(opCatchSub, s, st)
				return true
			}
		}
		if isHost(s) && s.status != "" {
			if b := findBoundary(s.n, ev, key); b != nil {
				r.pushN(opCatchBnd, s, b)
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
			if s.k != kStart || s.ev != ev {
				continue
			}
			if s.hasRef && s.key == key {
				return s
			}
			if !s.hasRef && all == nil {
				all = s
			}
		}
	}
	return all
}

func findBoundary(a *node, ev evKind, key string) *node {
	var all *node
	for _, b := range a.boundaries {
		if b.ev != ev {
			continue
		}
		if b.hasRef && b.key == key {
			return b
		}
		if !b.hasRef && all == nil {
			all = b
		}
	}
	return all
}

// broadcast delivers a signal to everything waiting for it when it is
// thrown: catch events, event-based gateways, boundary events, event
// sub-process starts, and signal start events (new instances).
func (r *run) broadcast(key string) {
	live := len(r.toks)
	for _, w := range r.toks[:live] {
		if w.dead || w.status == "" {
			continue
		}
		if w.status == sdk.Waiting {
			switch w.n.k {
			case kCatch:
				if w.n.ev == evSignal && w.n.key == key {
					r.pushN(opFire, w, w.n)
					continue
				}
			case kEventGateway:
				for _, tg := range w.n.targets {
					if tg.ev == evSignal && tg.key == key {
						r.pushN(opFire, w, tg)
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
			r.pushN(opStartInst, nil, s)
		}
	}
}

// subscriptions fires the event sub-process starts and boundary events of
// w that match a signal: an interrupting one alone (event sub-processes
// first), else every non-interrupting one.
func (r *run) subscriptions(w *tok, ev evKind, key string) {
	var subs, bnds []*node
	if c := containerOf(w); c != nil && !w.interrupted() {
		for _, es := range c.eventSubs {
			for _, s := range es.children {
				if s.k == kStart && s.ev == ev && s.key == key {
					subs = append(subs, s)
				}
			}
		}
	}
	if isHost(w) {
		for _, b := range w.n.boundaries {
			if b.ev == ev && b.key == key {
				bnds = append(bnds, b)
			}
		}
	}
	for _, s := range subs {
		if s.interrupting {
			r.pushN(opCatchSub, w, s)
			return
		}
	}
	for _, b := range bnds {
		if b.interrupting {
			r.pushN(opCatchBnd, w, b)
			return
		}
	}
	for _, s := range subs {
		r.pushN(opCatchSub, w, s)
	}
	for _, b := range bnds {
		r.pushN(opCatchBnd, w, b)
	}
}

// sendMessages queues the messages of n's outgoing message flows.
func (r *run) sendMessages(n *node) {
	for _, tg := range n.msgOut {
		r.pushN(opMessage, nil, tg)
	}
}

// message delivers a message to node tg: the oldest token waiting for it,
// else a new instance when tg is a start event; otherwise it is lost.
func (r *run) message(tg *node) {
	for _, w := range r.toks {
		if w.dead || w.status == "" {
			continue
		}
		switch {
		case tg.k == kBoundary && w.n == tg.attached && isHost(w):
			r.fireBoundary(w, tg)
			return
		case tg.k == kStart && tg.parent.k == kEventSub && containerOf(w) == tg.parent.parent:
			if tg.interrupting && w.interrupted() {
				continue
			}
			r.fireEventSub(w, tg)
			return
		case w.status == sdk.Waiting && w.n == tg && hasString(w.triggers, tg.id):
			r.fire(w, tg)
			return
		case w.status == sdk.Waiting && w.n.k == kEventGateway && hasNode(w.n.targets, tg):
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
	case w.n.k == kEventGateway:
		s := w.scope
		r.kill(w)
		r.push(opSignal, r.newTok(ev, s))
	case ev == w.n && w.n.k == kTask && w.attr(attrMsgWait) != nil:
		// the message arrived: now the host runs the task
		host := w.n.hostTriggers
		if w.kind == tkInstance {
			host = nil
		}
		r.rest(w, sdk.Ready, host)
	case ev == w.n && w.n.k == kReceiveTask:
		r.activityDone(w, nil)
	case ev == w.n:
		r.push(opSignal, w)
	}
}

// fireBoundary fires boundary event b of host h.
func (r *run) fireBoundary(h *tok, b *node) {
	if b.interrupting {
		r.killChildren(h)
		r.emit(sdk.Exit, h.n)
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
		if s.kind == tkPlain && s.n.k == kSubProcess {
			host = s.n.hostTriggers
		}
		r.rest(s, sdk.Scope, host)
	}
	sub := r.newTok(es, s)
	r.rest(sub, sdk.Scope, es.subTriggers)
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
	r.rest(inst, sdk.Scope, p.subTriggers)
	if s.k == kStart {
		r.push(opSignal, r.newTok(s, inst))
	}
	for _, n := range p.implicit {
		r.push(opEnter, r.newTok(n, inst))
	}
}

// evalEnv is the expression scope at token t: the state's env, the
// variables of the nearest multi-instance instance, and extra. The scope is
// the run's own, valid until the next call.
func (r *run) evalEnv(t *tok, extra map[string]any) *scope {
	var inst *tok
	for s := t; s != nil; s = s.scope {
		if s.kind == tkInstance {
			inst = s
			break
		}
	}
	var attrs map[string]any
	if t != nil {
		attrs = t.attrs
	}
	if inst != nil {
		attrs = inst.attrs
	}
	r.sc = scope{env: r.env, token: attrs, inst: inst, extra: extra}
	return &r.sc
}

// decision turns the run into the delta the host applies.
func (r *run) decision() *sdk.Decision {
	if r.buf == nil {
		r.buf = new(decisionBuf)
	}
	buf := r.buf
	d := &buf.d
	d.Trace, d.Set = r.trace, r.set
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
		d.Fault = r.fault
	}
	// Give ids to new resting tokens, in creation order.
	for _, t := range r.toks {
		if t.dead || t.id != "" {
			continue
		}
		r.seq++
		t.id = tokenID(r.seq)
	}
	live, adds, removes := 0, 0, 0
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
