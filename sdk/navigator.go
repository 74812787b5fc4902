package sdk

import (
	"context"
	"math"
	"sync/atomic"
	"time"
	"unsafe"
)

// Navigator walks a routine (a BPMN diagram, a DAG, a chain). It keeps no
// run state and is deterministic: the host owns the token state, passes it
// in with every call, and applies the Decision that comes back. The same
// request gives the same Decision, byte for byte: no wall-clock time, no
// random ids (token ids come from State.Seq).
//
// A navigator must not modify the requests it is given (their maps may be
// shared between calls; see Serve's binding cache), nor keep a request or
// the maps and slices it holds past the call's return: a WebAssembly
// plugin decodes each call into the same request structs and updates a
// binding's variables in place. Copy what must outlive the call. Over a wire transport
// the SDK answers the bind-once methods (PROTOCOL.md, "Binding") for every
// Navigator: the plugin receives the routine's strategy once and each call
// only what changed, but the Navigator still sees a whole State.
type Navigator interface {
	Plugin
	// Load parses and validates a routine. Invalid routines return an
	// *Error with CodeInvalid and positioned Problems (all of them).
	// Later calls refer to the routine by Routine.Hash.
	Load(ctx context.Context, r *LoadRequest) (*Routine, error)
	// Start begins an instance: at the none start event, or at the start
	// event named by Trigger.
	Start(ctx context.Context, r *StartRequest) (*Decision, error)
	// Next reports that the token's node completed (or failed, or was
	// skipped) and asks where execution goes. It also answers a Choice.
	Next(ctx context.Context, r *NextRequest) (*Decision, error)
	// Boundary reports that an event fired for a token: a boundary event
	// attached to its activity, or an event after an event-based gateway.
	Boundary(ctx context.Context, r *BoundaryRequest) (*Decision, error)
	// IO names the variables a node reads and writes.
	IO(ctx context.Context, r *IORequest) (*NodeIO, error)
}

// OutputBlind is an optional interface of a Navigator. OutputBlind
// returning true promises that Next never reads Outcome.Output (a chain or
// a DAG moves on by the outcome's status alone). Serve then says so in its
// Describe answer (Info.OutputBlind), and a host that knows the flag
// leaves the output out of its requests; from an older host, Serve checks
// the output an api 2 request carries as it would decode it, but builds
// none of it. Next may so see Outcome.Output nil (over api 1 from an
// older host it still gets it). In a WebAssembly guest decoding a step's
// output is a tenth of a navigator call. It must return the same value
// on every call.
type OutputBlind interface {
	OutputBlind() bool
}

// LoadRequest carries a routine document.
type LoadRequest struct {
	// Name is the file name used in problem positions.
	Name    string `json:"name"`
	Routine []byte `json:"routine"`
	// Decisions are the DMN models the routine's business rule tasks call
	// (a pipeline's [routine] decisions), in the order given. A navigator
	// that calls none ignores them.
	Decisions []File `json:"decisions,omitempty"`
}

// File is a named file's content.
type File struct {
	// Name is the file name used in problem positions.
	Name string `json:"name"`
	Data []byte `json:"data"`
}

// Routine summarises a loaded routine.
type Routine struct {
	// Hash is the hex sha256 of the routine bytes, or, when the request
	// carried Decisions, of the routine and every decision file (names and
	// bytes), so that a changed model is another routine. Requests refer
	// to it.
	Hash string `json:"hash"`
	// ID is the routine's own id (the BPMN process id, the DAG or chain name).
	ID    string `json:"id"`
	Nodes []Node `json:"nodes"`
	// Starts lists the start nodes; the first is the default start.
	Starts []string `json:"starts,omitempty"`
	// Expressions lists the expressions the routine holds (flow
	// conditions, ...), so that the host can check at load what they
	// refer to: strategy.parameters.NAME, vars.NODE, input.NAME.
	Expressions []Expression `json:"expressions,omitempty"`
	// Reads, when set, names every run variable (Env.Vars key) that
	// navigating the routine reads: in conditions, in checks of a
	// start's inputs, anywhere. A client may then send the navigator only
	// those (a binding client does: see PROTOCOL.md, "Variables a
	// routine reads"), so the navigator's answers must not depend on any
	// other being present or absent. Nil: it may read any variable.
	Reads *Reads `json:"reads,omitempty"`
}

// Reads names the run variables a routine's navigation reads
// (Routine.Reads).
type Reads struct {
	// Vars lists the variable names read; empty: none.
	Vars []string `json:"vars"`
}

// Expression is one expression written in a routine.
type Expression struct {
	// Element names where it is written, as problems name it, e.g.
	// `sequenceFlow "f3"`.
	Element string `json:"element"`
	Line    int    `json:"line,omitempty"`
	// What says which of the element's expressions it is, e.g. condition.
	What string `json:"what,omitempty"`
	Text string `json:"text"`
	// Names, when the navigator reports them, are the variables the
	// expression reads that neither it nor the routine binds (not its
	// roots such as input and vars, not a local such as a multi-instance
	// loopCounter): each must be a start input's variable or be written
	// by a step, a node's Outputs or a delivery. A check such as sextant
	// routine validate warns about the others (a misspelt name).
	Names []string `json:"names,omitempty"`
	// Unknown lists the functions the expression calls that its language
	// does not have (a misspelt built-in): it would give null at run time.
	Unknown []string `json:"unknown,omitempty"`
}

// Node describes one routine node.
type Node struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	// Kind is the navigator's element kind, e.g. serviceTask, exclusiveGateway, task.
	Kind string `json:"kind"`
	Line int    `json:"line,omitempty"`
	// Step is true when the host must run a [steps] entry at this node.
	Step bool `json:"step,omitempty"`
	// Type is the node's task type (BPMN: zeebe:taskDefinition type). A
	// pipeline's [steps.X] binds the node whose id is X, else every node
	// whose type is X.
	Type    string   `json:"type,omitempty"`
	Inputs  []string `json:"inputs,omitempty"`
	Outputs []string `json:"outputs,omitempty"`
	// Event says what fires the node when it is an event the host
	// delivers (a timer, message or signal catch or boundary event, a
	// receive task); nil otherwise.
	Event *EventDef `json:"event,omitempty"`
}

// The event types of EventDef.Type.
const (
	EventTimer       = "timer"
	EventMessage     = "message"
	EventSignal      = "signal"
	EventConditional = "conditional"
)

// EventDef describes what fires an event node, so that the host can wait
// for it durably and deliver it through Navigator.Boundary.
type EventDef struct {
	// Type is EventTimer, EventMessage, EventSignal or EventConditional.
	Type string `json:"type"`
	// Name is the message or signal name ("" for a catch-all). A message
	// with a correlation key (BPMN zeebe:subscription) has its key
	// evaluated by the navigator into the waiting token's
	// Attrs["correlations"][event id]: the key as text, or
	// {"error": why}; without one it correlates by task id.
	Name string `json:"name,omitempty"`
	// Timer is the timer definition as written, its kind first:
	// "timeDuration PT5M", "timeDate 2026-01-02T15:04:05Z", "timeCycle
	// R3/PT10M". A timer whose value is an expression is evaluated by the
	// navigator into the waiting token's Attrs["timers"][event id], in the
	// same form.
	Timer string `json:"timer,omitempty"`
	// Condition is a conditional event's condition (FEEL, without Zeebe's
	// "=" prefix): the
	// host evaluates it over the run's variables whenever they may have
	// changed and fires the event when it holds. The event can also be
	// fired by naming it (`sextant send TASK --message EVENT_ID`).
	Condition string `json:"condition,omitempty"`
	// Interrupting is set on a boundary event that cancels the activity it
	// is attached to: the host cancels the running step when it fires.
	Interrupting bool `json:"interrupting,omitempty"`
}

// Env is the data that conditions and expressions see.
type Env struct {
	Input    map[string]any `json:"input,omitempty"`
	Vars     map[string]any `json:"vars,omitempty"`
	Strategy map[string]any `json:"strategy,omitempty"`
	// Now is the run's clock at the call (the recorded clock in replay):
	// what FEEL's today() and now() read, so that a navigator stays
	// deterministic. Zero means the navigator may read the wall clock.
	Now time.Time `json:"now,omitzero"`
}

// TokenStatus says what a token is doing.
type TokenStatus string

// The token states.
const (
	// Ready: the host runs the step at the token's node, then calls Next.
	Ready TokenStatus = "ready"
	// Waiting: the token waits for one of its Triggers (a catch event, a
	// receive task, an event-based gateway, a human).
	Waiting TokenStatus = "waiting"
	// Parked: the token waits at a join for other branches; the navigator
	// moves it on.
	Parked TokenStatus = "parked"
	// Scope: the token stands for a running scope (sub-process,
	// multi-instance body, call activity) whose inner tokens name it as Scope.
	Scope TokenStatus = "scope"
)

// Token is one point of control in a running instance. The host stores
// tokens verbatim and never interprets Attrs.
type Token struct {
	ID     string      `json:"id"`
	Node   string      `json:"node"`
	Status TokenStatus `json:"status"`
	// Scope is the id of the token of the enclosing scope, or "" for a
	// token at the top of its instance. A navigator may leave out the token
	// of a scope that holds nothing (the BPMN navigator does so with the
	// process's), so "" does not mean the instance lists no scope token.
	Scope string `json:"scope,omitempty"`
	// Triggers lists the event node ids that may fire for this token:
	// boundary events on its activity, the events after an event-based
	// gateway, or its own node for a waiting catch event.
	Triggers []string `json:"triggers,omitempty"`
	// Attempt counts retries of the token's step, from 0.
	Attempt int `json:"attempt,omitempty"`
	// DelayMS asks the host to wait before running a Ready token (retry backoff).
	DelayMS int64 `json:"delay_ms,omitempty"`
	// Attrs is navigator bookkeeping (loopCounter, item, ...); step
	// templates see it as .token.
	Attrs map[string]any `json:"attrs,omitempty"`
}

// State is the host-owned state of one routine instance.
type State struct {
	Routine string  `json:"routine"`
	Tokens  []Token `json:"tokens,omitempty"`
	// Seq is the last token sequence number issued; navigators derive new
	// token ids from it and return the new value in Decision.Seq.
	Seq int64 `json:"seq,omitempty"`
	// Data is navigator bookkeeping that is not tied to one token.
	Data map[string]any `json:"data,omitempty"`
	Env  Env            `json:"env"`
}

// StartRequest starts an instance.
type StartRequest struct {
	State State `json:"state"`
	// Trigger names a start event; "" means the none start event.
	Trigger string `json:"trigger,omitempty"`
}

// Status is how a node's work ended.
type Status string

// The outcome statuses.
const (
	OK      Status = "ok"
	Failed  Status = "failed"
	Skipped Status = "skipped"
)

// Outcome reports how a token's node ended.
type Outcome struct {
	Status Status `json:"status"`
	// Error is the error code raised (BPMN error / escalation code), if any.
	Error string `json:"error,omitempty"`
	// Output is the step's output. A Navigator that implements
	// OutputBlind and answers true receives it nil over a wire transport.
	Output map[string]any `json:"output,omitempty" wire:"skippable"`
	// Flows answers a Choice: the outgoing flow ids the host selected.
	Flows []string `json:"flows,omitempty"`
}

// NextRequest reports a token's completion.
type NextRequest struct {
	State   State   `json:"state"`
	Token   string  `json:"token"`
	Outcome Outcome `json:"outcome"`
}

// BoundaryRequest reports an event firing for a token.
type BoundaryRequest struct {
	State State  `json:"state"`
	Token string `json:"token"`
	// Event is the id of the event node that fired (one of the token's Triggers).
	Event   string         `json:"event"`
	Payload map[string]any `json:"payload,omitempty"`
}

// IORequest asks for one node's inputs and outputs.
type IORequest struct {
	Routine string `json:"routine"`
	Node    string `json:"node"`
}

// NodeIO names the variables a node reads and writes.
type NodeIO struct {
	Inputs  []string `json:"inputs,omitempty"`
	Outputs []string `json:"outputs,omitempty"`
}

// BindRequest binds a loaded routine and a strategy in a navigator plugin
// instance (navigator.bind), so that later calls (the navigator.bound.*
// methods) carry neither. See PROTOCOL.md, "Binding".
type BindRequest struct {
	// Binding is the id later calls name. The host makes it from the
	// content (the routine hash and the strategy), so one id never stands
	// for two contents; plugins treat it as opaque.
	Binding string `json:"binding"`
	// Routine is the hash of a routine loaded by Load.
	Routine  string         `json:"routine"`
	Strategy map[string]any `json:"strategy,omitempty"`
}

// Bound answers a BindRequest.
type Bound struct {
	Binding string `json:"binding"`
}

// BoundState is State sent against a binding: the routine and strategy
// come from the binding, and the plugin keeps the Env's input and
// variables between calls, so each call carries only what changed.
//
// The plugin keeps, per binding, one Env (input and variables) and the
// version that names it. A request with Base 0 resets it: Input replaces
// the input and Set becomes the variables. A request with Base equal to
// the version held applies Set and Unset to the variables. Either way the
// Env then takes the name Version. A binding the plugin does not hold, or
// a Base it does not hold, is answered with CodeUnbound and changes
// nothing; the host then resends the call with Base 0 (re-binding first if
// needed).
type BoundState struct {
	Binding string `json:"binding"`
	// Base names the Env this request changes; 0 resets it.
	Base uint64 `json:"base,omitempty"`
	// Version names the Env once this request is applied; never 0.
	Version uint64 `json:"version"`
	// Input is the instance's input (only with Base 0).
	Input map[string]any `json:"input,omitempty"`
	// Set assigns variables (with Base 0: all of them).
	Set map[string]any `json:"set,omitempty" wire:"pairs"`
	// Unset removes variables, sorted.
	Unset  []string       `json:"unset,omitempty"`
	Tokens []Token        `json:"tokens,omitempty" wire:"kept"`
	Seq    int64          `json:"seq,omitempty"`
	Data   map[string]any `json:"data,omitempty"`
	// Now is Env.Now of the call: it travels with every call, never kept.
	Now time.Time `json:"now,omitzero"`
}

// BoundStartRequest is StartRequest against a binding (navigator.bound.start).
type BoundStartRequest struct {
	State   BoundState `json:"state"`
	Trigger string     `json:"trigger,omitempty"`
}

// BoundNextRequest is NextRequest against a binding (navigator.bound.next).
type BoundNextRequest struct {
	State   BoundState `json:"state"`
	Token   string     `json:"token"`
	Outcome Outcome    `json:"outcome"`
}

// BoundBoundaryRequest is BoundaryRequest against a binding
// (navigator.bound.boundary).
type BoundBoundaryRequest struct {
	State   BoundState     `json:"state"`
	Token   string         `json:"token"`
	Event   string         `json:"event"`
	Payload map[string]any `json:"payload,omitempty"`
}

// EventType is enter or exit.
type EventType string

// The trace event types.
const (
	Enter EventType = "enter"
	Exit  EventType = "exit"
)

// Event is one trace entry: a token arriving at or leaving a node.
type Event struct {
	Type EventType `json:"type"`
	Node string    `json:"node"`
}

// Flow is one outgoing sequence flow a Choice may take.
type Flow struct {
	ID     string `json:"id"`
	Target string `json:"target"`
}

// Choice is a decision the navigator cannot make itself (a gateway without
// conditions): the host selects flows and answers with Next(Outcome.Flows).
type Choice struct {
	Token string `json:"token"`
	Node  string `json:"node"`
	Flows []Flow `json:"flows"`
	// Multi allows selecting more than one flow (inclusive gateway).
	Multi bool `json:"multi,omitempty"`
}

// Fault ends an instance with an error nothing caught (an uncaught BPMN
// error end event, a gateway with no way out).
type Fault struct {
	Node    string `json:"node"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message"`
}

// Decision is a navigator's answer: a delta the host applies to its State.
//
// The host removes the tokens in Remove, then for each token in Add replaces
// the token with the same id or appends it, sets Seq, replaces Data when it
// is non-nil, assigns Set into Env.Vars, and then runs every Ready token.
type Decision struct {
	Remove []string       `json:"remove,omitempty"`
	Add    []Token        `json:"add,omitempty"`
	Seq    int64          `json:"seq,omitempty"`
	Data   map[string]any `json:"data,omitempty"`
	// Set assigns variables (multi-instance output collections, fan-out results).
	Set map[string]any `json:"set,omitempty"`
	// Waiting lists join nodes that still wait for other branches.
	Waiting []string `json:"waiting,omitempty"`
	Choice  *Choice  `json:"choice,omitempty"`
	// Complete is true when the instance has finished.
	Complete bool `json:"complete,omitempty"`
	// roomN is how many tokens room holds. It sits in Complete's padding:
	// a decision is allocated with every answer, and its bytes, not its
	// count, set how often the host's collector runs.
	roomN uint32
	Fault *Fault `json:"fault,omitempty"`
	// Trace lists the enter/exit events this step produced, in order.
	Trace []Event `json:"trace,omitempty"`

	// room is the first token of the memory the navigator reserved for
	// Apply's result (see ReserveApply). owner is d itself until an Apply
	// takes the room, so a copy of d, whose address differs, never writes
	// there too.
	room  *Token
	owner unsafe.Pointer
}

// ReserveApply gives Apply room for the tokens of the state it returns: the
// first Apply on d whose result fits in room builds it there instead of
// allocating. A navigator that knows how many tokens the applied state
// holds can allocate that room together with its answer. room must be
// memory nothing else holds; it is used at most once, and never by a copy
// of d. It changes nothing on the wire.
//
// A navigator may also write the tokens it adds where the applied state
// will hold them: d.Add the last len(d.Add) tokens of room, after as many
// tokens as the state keeps. Apply then leaves them in place (when every
// added token is new to the state and the state keeps that many), and the
// returned state's added tokens are d.Add's own memory; otherwise it
// allocates as if there were no room.
func (d *Decision) ReserveApply(room []Token) {
	if len(room) == 0 || uint64(len(room)) > math.MaxUint32 {
		d.room, d.roomN, d.owner = nil, 0, nil
		return
	}
	d.room, d.roomN = unsafe.SliceData(room), uint32(len(room))
	d.owner = unsafe.Pointer(d)
}

// takeRoom claims d's reserved room when it holds n tokens.
func (d *Decision) takeRoom(n int) []Token {
	if n == 0 || d.owner == nil || int(d.roomN) < n || !atomic.CompareAndSwapPointer(&d.owner, unsafe.Pointer(d), nil) {
		return nil
	}
	return unsafe.Slice(d.room, d.roomN)[:0:n]
}

// addIn reports whether d.Add lies in room[:n] (a room claimed for n
// tokens), and whether exactly as its last len(d.Add) tokens.
func (d *Decision) addIn(room []Token, n int) (overlaps, atEnd bool) {
	if len(d.Add) == 0 || cap(room) == 0 {
		return false, false
	}
	size := unsafe.Sizeof(Token{})
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(room)))
	hi := lo + uintptr(cap(room))*size
	a := uintptr(unsafe.Pointer(unsafe.SliceData(d.Add)))
	b := a + uintptr(len(d.Add))*size
	if b <= lo || a >= hi {
		return false, false
	}
	return true, len(d.Add) <= n && &room[:n][n-len(d.Add)] == &d.Add[0]
}

// Apply applies d to s as the host does, returning the new state. It is
// exported so that sdktest and navigator authors apply decisions exactly as
// the host does. Apply never changes s; the state it returns may share
// d.Add's memory (see ReserveApply).
func (d *Decision) Apply(s State) State {
	out := s
	var drop map[string]bool
	if len(d.Remove) > maxScanRemove {
		drop = make(map[string]bool, len(d.Remove))
		for _, id := range d.Remove {
			drop[id] = true
		}
	}
	// Count the tokens first, so that the new state is allocated once;
	// stay remembers which of them stay, so that no id is looked up twice.
	kept, added := 0, 0
	var stay stays
	for i := range s.Tokens {
		if !d.removed(s.Tokens[i].ID, drop) {
			kept++
			stay.set(i)
		}
	}
	for j := range d.Add {
		if !d.replaces(j, s.Tokens, &stay, drop) {
			added++
		}
	}
	n := kept + added
	if n > 0 || len(d.Remove) > 0 {
		toks := d.takeRoom(n)
		inPlace := false
		if overlaps, atEnd := d.addIn(toks, n); overlaps {
			// Either the added tokens are already where the state holds
			// them, or building there would overwrite d.Add.
			inPlace = atEnd && added == len(d.Add)
			if !inPlace {
				toks = nil
			}
		}
		if toks == nil {
			toks = make([]Token, 0, n)
		}
		for i := range s.Tokens {
			if stay.has(i, d, s.Tokens, drop) {
				toks = toks[:len(toks)+1]
				copyToken(&toks[len(toks)-1], &s.Tokens[i])
			}
		}
		if inPlace {
			toks = toks[:n]
		} else {
			for j := range d.Add {
				t := &d.Add[j]
				i := 0
				for i < len(toks) && toks[i].ID != t.ID {
					i++
				}
				if i == len(toks) {
					toks = toks[:i+1]
				}
				copyToken(&toks[i], t)
			}
		}
		out.Tokens = toks
	} else {
		out.Tokens = nil
	}
	if d.Seq > out.Seq {
		out.Seq = d.Seq
	}
	if d.Data != nil {
		out.Data = d.Data
	}
	if len(d.Set) > 0 {
		vars := make(map[string]any, len(s.Env.Vars)+len(d.Set))
		for k, v := range s.Env.Vars {
			vars[k] = v
		}
		for k, v := range d.Set {
			vars[k] = v
		}
		out.Env.Vars = vars
	}
	return out
}

// copyToken copies t to dst field by field, and leaves alone the fields
// that are empty in both (most of them, in memory Apply allocated): copying
// the whole struct goes through the runtime's bulk write barrier, which
// visits every pointer slot of the token whenever a collection is marking.
func copyToken(dst, t *Token) {
	dst.ID, dst.Node, dst.Status = t.ID, t.Node, t.Status
	if t.Scope != "" || dst.Scope != "" {
		dst.Scope = t.Scope
	}
	if t.Triggers != nil || dst.Triggers != nil {
		dst.Triggers = t.Triggers
	}
	dst.Attempt, dst.DelayMS = t.Attempt, t.DelayMS
	if t.Attrs != nil || dst.Attrs != nil {
		dst.Attrs = t.Attrs
	}
}

// maxScanRemove is how many removed ids Apply looks up by scanning; more
// go into a map.
const maxScanRemove = 8

// removed reports whether Apply drops the token with id; drop holds
// d.Remove when it is long.
func (d *Decision) removed(id string, drop map[string]bool) bool {
	if drop != nil {
		return drop[id]
	}
	for _, r := range d.Remove {
		if r == id {
			return true
		}
	}
	return false
}

// stays marks the first 64 tokens of a state that an Apply keeps.
type stays uint64

func (s *stays) set(i int) {
	if i < 64 {
		*s |= 1 << i
	}
}

// has reports whether Apply keeps toks[i], looking its id up past the
// first 64.
func (s stays) has(i int, d *Decision, toks []Token, drop map[string]bool) bool {
	if i < 64 {
		return s&(1<<i) != 0
	}
	return !d.removed(toks[i].ID, drop)
}

// replaces reports whether d.Add[j] replaces a token rather than adding
// one: a token of toks that stays, or an earlier added token, has its id.
func (d *Decision) replaces(j int, toks []Token, stay *stays, drop map[string]bool) bool {
	id := d.Add[j].ID
	for i := range toks {
		if toks[i].ID == id && stay.has(i, d, toks, drop) {
			return true
		}
	}
	for _, a := range d.Add[:j] {
		if a.ID == id {
			return true
		}
	}
	return false
}
