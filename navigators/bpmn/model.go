package bpmn

import (
	"encoding/binary"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/sextant-dev/sextant/sdk"
)

// kind classifies a parsed element by how the engine treats it.
type kind uint8

const (
	kProcess kind = iota
	kSubProcess
	kEventSub // subProcess triggeredByEvent="true"
	kCallActivity
	kTask // task, serviceTask, userTask, scriptTask, sendTask, manualTask, businessRuleTask
	kReceiveTask
	kStart
	kEnd
	kCatch // intermediateCatchEvent
	kThrow // intermediateThrowEvent
	kBoundary
	kExclusive
	kParallel
	kInclusive
	kEventGateway
)

// isContainer reports whether nodes of kind k hold flow nodes.
func (k kind) isContainer() bool { return k == kProcess || k == kSubProcess || k == kEventSub }

// isActivity reports whether k is an activity (boundary events attach to it).
func (k kind) isActivity() bool {
	return k == kSubProcess || k == kCallActivity || k == kTask || k == kReceiveTask
}

// evKind is an event's trigger.
type evKind uint8

const (
	evNone evKind = iota
	evMessage
	evTimer
	evSignal
	evError
	evEscalation
	evTerminate
	evLink
	evConditional
	evCompensate
	evCancel
)

var evNames = [...]string{"none", "message", "timer", "signal", "error", "escalation", "terminate", "link", "conditional", "compensation", "cancel"}

func (e evKind) String() string { return evNames[e] }

// external reports whether an event of this kind is fired from outside
// (by the host, through Boundary) rather than thrown inside the routine.
func (e evKind) external() bool {
	return e == evNone || e == evMessage || e == evTimer || e == evSignal || e == evConditional
}

// node is one parsed flow node, or a process.
type node struct {
	id, name string
	tag      string // the XML element name, e.g. serviceTask
	line     int
	k        kind

	ev        evKind
	key       string // error/escalation code, signal name, link name
	hasRef    bool   // the definition names a ref (false: catch-all)
	timer     string // "timeDuration PT1S" and so on, for the host
	timerKind string // timeDuration, timeDate or timeCycle
	timerExpr *cond  // the timer value is an expression
	msgRef    string // the message's id (messageRef)
	corrKey   *cond  // the message's zeebe:subscription correlationKey
	condition string // a conditional event's condition, for the host
	badDef    bool   // an unsupported event definition was reported

	parent *node // enclosing container
	proc   *node // top-level process

	in, out []*flow // sequence flows in document order
	def     *flow   // default flow

	attached     *node   // boundary: the activity it is attached to
	interrupting bool    // boundary cancelActivity / event sub-process start isInterrupting
	boundaries   []*node // activity: its boundary events in document order

	// Containers.
	children  []*node // flow nodes directly inside, document order
	starts    []*node // none start events
	allStarts []*node // every start event
	eventSubs []*node // event sub-processes directly inside
	implicit  []*node // nodes started with the container (no incoming flow)
	// eventGateway: the catch events and receive tasks it waits on.
	targets []*node

	msgOut []*node // targets of outgoing message flows (flow nodes only)
	msgIn  bool    // an incoming message flow makes an activity wait first

	called *node // callActivity: the process it calls
	mi     *multi

	// Compensation.
	forComp     bool  // isForCompensation: a compensation handler
	compHandler *node // activity: its handler (through a compensation boundary event)
	compBound   bool  // activity: has a compensation boundary event
	compRef     *node // compensation throw: the activity to compensate (nil: all)
	compNoWait  bool  // compensation throw: waitForCompletion="false"
	compSub     *node // container: its compensation event sub-process
	compStart   *node // compensation event sub-process: its start event

	step bool // the host runs a step here
	io   sdk.NodeIO
	ix   uint32 // index in model.nodes (set by internIDs)

	// Zeebe extensions (see zeebe.go).
	inMaps, outMaps []mapping
	locals          map[string]bool // variables local to a token here: its input mapping targets
	headers         map[string]any  // zeebe:taskHeaders (shared, never mutated)
	taskType        string          // zeebe:taskDefinition type
	script          *cond           // zeebe:script expression: the navigator runs the task
	resultVar       string          // zeebe:script or zeebe:calledDecision resultVariable
	decision        *calledDecision // zeebe:calledDecision: the navigator evaluates the decision

	// Precomputed token triggers (shared, never mutated).
	waitTriggers  []string // a token resting here: own id (if it waits) + boundary events
	scopeTriggers []string // a scope token of this container: boundaries + event sub-process starts
	hostTriggers  []string // boundary events only (interrupted scope, MI body, call activity)
	subTriggers   []string // event sub-process starts only (MI instance scope, process)
	timers        map[string]string
	timerAttrs    map[string]any // {"timers": timers}, shared
	timerEvents   []*node        // timers of these events are expressions
	corrEvents    []*node        // message events with a correlation key

	// Inclusive joins: for each incoming flow, the nodes from which a token
	// can still arrive on it.
	upstream []map[*node]bool
}

// elem renders the node for problems and faults: `exclusiveGateway "gw1"`.
func (n *node) elem() string { return n.tag + ` "` + n.id + `"` }

// flow is a sequence flow.
type flow struct {
	id       string
	line     int
	src, dst *node
	cond     *cond
	parked   map[string]any // attrs of a token parked after this flow (shared)
	ix       int32          // index in model.flowList (set by internIDs)
}

// elem renders the flow for problems: `sequenceFlow "f1"`.
func (f *flow) elem() string { return `sequenceFlow "` + f.id + `"` }

// multi describes multi-instance loop characteristics.
type multi struct {
	sequential bool
	collection *cond // input collection expression
	cardinal   *cond // loopCardinality
	element    string
	outColl    string
	outElem    *cond
	outLocal   string // the instance's local variable the output element reads (see localOutput)
	completion *cond
}

// model is a loaded routine: every process of one definitions document.
type model struct {
	hash    string
	file    string // the name the routine was loaded under, for positions in faults
	main    *node
	procs   []*node
	byID    map[string]*node
	flows   map[string]*flow
	routine *sdk.Routine
	// ids holds every node id, each after its node's index in nodes (4
	// bytes, little endian), then every flow id, each after its index in
	// flowList with the top bit set; the ids are views into it (see node
	// and flow).
	ids   []byte
	nodes []*node
	// flowList holds every sequence flow, ordered by id: a token names the
	// flow it crossed by its index (see tokBits).
	flowList []*flow
	// idList holds every node's id at its index in nodes: a one-element
	// slice of it names one node without allocating (sharedIDs).
	idList []string
	traces traceCache // the traces answers have carried (see trace.go)
	// signal catchers: start events of top-level processes that a signal starts.
	signalStarts []*node
}

// idArena holds the interned ids of the first routines loaded (see
// idBuffer). It is never reclaimed, and it is bounded.
var idArena struct {
	mu   sync.Mutex
	buf  [256 << 10]byte
	used int
}

// idBuffer returns an empty buffer for size bytes of interned ids: carved
// from idArena while it lasts, else from the heap. Answers hold node ids
// in every token and trace event; while a collection marks, storing a
// pointer outside the heap costs the write barrier one lookup, where one
// into the heap has its object found and marked (as for the token ids).
func idBuffer(size int) []byte {
	a := &idArena
	a.mu.Lock()
	defer a.mu.Unlock()
	if size > len(a.buf)-a.used {
		return make([]byte, 0, size)
	}
	b := a.buf[a.used : a.used : a.used+size]
	a.used += size
	return b
}

// flowTag marks a flow's index in model.ids.
const flowTag = 1 << 31

// internIDs moves every node and flow id into one buffer, each id preceded
// by its index, so that node and flow find the element of an id the
// navigator handed out (a token's Node, a parked token's flow) from the
// id's address, without hashing it.
func (m *model) internIDs() {
	ids := make([]string, 0, len(m.byID))
	size := 0
	for id := range m.byID {
		ids = append(ids, id)
		size += 4 + len(id)
	}
	for id := range m.flows {
		size += 4 + len(id)
	}
	slices.Sort(ids)
	buf := idBuffer(size)
	m.nodes = make([]*node, len(ids))
	m.idList = make([]string, len(ids))
	for i, id := range ids {
		n := m.byID[id]
		m.nodes[i] = n
		n.ix = uint32(i)
		buf = binary.LittleEndian.AppendUint32(buf, uint32(i))
		start := len(buf)
		buf = append(buf, id...)
		n.id = unsafe.String(&buf[start], len(id))
		m.idList[i] = n.id
	}
	m.flowList = make([]*flow, 0, len(m.flows))
	for _, f := range m.flows {
		m.flowList = append(m.flowList, f)
	}
	slices.SortFunc(m.flowList, func(a, b *flow) int { return strings.Compare(a.id, b.id) })
	for i, f := range m.flowList {
		f.ix = int32(i)
		buf = binary.LittleEndian.AppendUint32(buf, uint32(i)|flowTag)
		start := len(buf)
		buf = append(buf, f.id...)
		f.id = unsafe.String(&buf[start], len(f.id))
		f.parked = map[string]any{attrFlow: f.id}
	}
	m.ids = buf
}

// interned returns the index stored in front of id when id's bytes lie in
// m.ids right after one, and false otherwise.
func (m *model) interned(id string) (uint32, bool) {
	if len(id) == 0 || len(m.ids) == 0 {
		return 0, false
	}
	off := uintptr(unsafe.Pointer(unsafe.StringData(id))) - uintptr(unsafe.Pointer(unsafe.SliceData(m.ids)))
	if off < 4 || off >= uintptr(len(m.ids)) {
		return 0, false
	}
	return binary.LittleEndian.Uint32(m.ids[off-4 : off]), true
}

// flow returns the flow with id, or nil, found as node finds a node.
func (m *model) flow(id string) *flow {
	if i, ok := m.interned(id); ok && i&flowTag != 0 && int(i&^flowTag) < len(m.flowList) {
		if f := m.flowList[i&^flowTag]; unsafe.StringData(f.id) == unsafe.StringData(id) && len(f.id) == len(id) {
			return f
		}
	}
	return m.flows[id]
}

// node returns the node with id, or nil. An id whose bytes lie in m.ids
// at the start of a node's id is that node's, which the index stored in
// front of it confirms; any other id (read back from JSON, built by the
// caller) is looked up by value.
func (m *model) node(id string) *node {
	if i, ok := m.interned(id); ok && int(i) < len(m.nodes) {
		if n := m.nodes[i]; unsafe.StringData(n.id) == unsafe.StringData(id) && len(n.id) == len(id) {
			return n
		}
	}
	return m.byID[id]
}
