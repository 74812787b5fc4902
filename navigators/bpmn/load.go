package bpmn

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/sextant-dev/sextant/navigators/feel"
	"github.com/sextant-dev/sextant/navigators/internal/reads"
	"github.com/sextant-dev/sextant/sdk"
)

// loader turns a definitions document into a model, collecting every
// problem with its line.
type loader struct {
	file  string
	probs []sdk.Problem
	m     *model

	messages    map[string]*xelem
	msgKeys     map[string]*cond // message id -> zeebe:subscription correlationKey
	reads       reads.Set        // the variables the routine's expressions and mappings read
	signals     map[string]*xelem
	errs        map[string]*xelem
	escalations map[string]*xelem
	seen        map[string]int // id -> line, for duplicates

	pendingFlows   []pendingFlow
	pendingNodes   []pendingNode
	pendingAssoc   []*xelem
	participants   map[string]*xelem
	procExecutable map[string]bool
	rejected       map[string]bool // ids of elements already reported unsupported
	// exprs are the expressions written in the routine, for the summary.
	exprs []sdk.Expression
}

type pendingFlow struct {
	x *xelem
	c *node
}

type pendingNode struct {
	x *xelem
	n *node
}

// problem records a positioned problem.
// cond compiles an expression of the routine (compileCond) and notes
// what it reads.
func (l *loader) cond(src string) (*cond, error) {
	c, err := compileCond(src)
	if err == nil {
		l.note(c)
	}
	return c, err
}

// note records the variables expression c may read for Routine.Reads:
// every name it looks up (feel.Expr.Refs) but those scope resolves
// otherwise; "vars", the whole map, reads them all. A name that turns out
// to be a multi-instance local or a step output is read in vain, never
// missed.
func (l *loader) note(c *cond) {
	for _, name := range c.x.Refs() {
		switch name {
		case "vars":
			l.reads.All()
		case "input", "strategy", "token":
		default:
			l.reads.Name(name)
		}
	}
}

func (l *loader) problem(line int, element, format string, args ...any) {
	l.probs = append(l.probs, sdk.Problem{File: l.file, Line: line, Element: element, Message: fmt.Sprintf(format, args...)})
}

// load parses and validates data. It never panics on any input.
func load(name string, data []byte) (m *model, err error) {
	defer func() {
		if r := recover(); r != nil {
			m = nil
			err = sdk.Invalid(sdk.Problem{File: name, Message: fmt.Sprintf("internal error while loading: %v", r)})
		}
	}()
	l := &loader{
		file:         name,
		messages:     map[string]*xelem{},
		msgKeys:      map[string]*cond{},
		signals:      map[string]*xelem{},
		errs:         map[string]*xelem{},
		escalations:  map[string]*xelem{},
		seen:         map[string]int{},
		participants: map[string]*xelem{},

		procExecutable: map[string]bool{},
		rejected:       map[string]bool{},
	}
	sum := sha256.Sum256(data)
	l.m = &model{hash: hex.EncodeToString(sum[:]), byID: map[string]*node{}, flows: map[string]*flow{}}
	root, line, perr := parseXML(data)
	if perr != nil {
		l.problem(line, "", "invalid XML: %v", perr)
		return nil, sdk.Invalid(l.probs...)
	}
	if root.space != nsBPMN || root.local != "definitions" {
		l.problem(root.line, "", "not a BPMN 2.0 document: root element is <%s>, want <definitions> in namespace %s", root.local, nsBPMN)
		return nil, sdk.Invalid(l.probs...)
	}
	l.definitions(root)
	if len(l.probs) > 0 {
		sort.SliceStable(l.probs, func(i, j int) bool { return l.probs[i].Line < l.probs[j].Line })
		return nil, sdk.Invalid(l.probs...)
	}
	return l.m, nil
}

// Elements that carry no execution semantics: documentation, diagrams'
// companions, data and resource modelling. They are accepted and ignored
// wherever they appear.
var ignored = set(
	"documentation", "extensionElements", "laneSet", "lane", "childLaneSet", "flowNodeRef",
	"dataObject", "dataObjectReference", "dataStoreReference", "dataStore", "textAnnotation", "text",
	"association", "group", "category", "categoryValue", "ioSpecification", "dataInput", "dataOutput",
	"inputSet", "outputSet", "dataInputRefs", "dataOutputRefs", "optionalInputRefs", "optionalOutputRefs",
	"whileExecutingInputRefs", "whileExecutingOutputRefs", "inputSetRefs", "outputSetRefs",
	"property", "auditing", "monitoring", "performer", "humanPerformer", "potentialOwner", "resourceRole",
	"resourceRef", "resourceAssignmentExpression", "resourceParameterBinding", "expression", "formalExpression",
	"correlationSubscription", "supports", "dataInputAssociation", "dataOutputAssociation",
	"sourceRef", "targetRef", "transformation", "assignment", "from", "to", "dataState",
	"incoming", "outgoing", "rendering", "script", "operationRef", "ioBinding", "categoryValueRef",
)

// Root elements that are declarations only.
var ignoredRoot = set(
	"itemDefinition", "interface", "operation", "inMessageRef", "outMessageRef", "errorRef", "dataStore", "resource",
	"resourceParameter", "import", "category", "categoryValue", "extension", "relationship", "source", "target",
	"partnerEntity", "partnerRole", "participantRef", "correlationProperty", "correlationPropertyRetrievalExpression",
	"messagePath", "dataPath", "endPoint", "documentation", "extensionElements", "globalTask", "globalUserTask",
	"globalScriptTask", "globalManualTask", "globalBusinessRuleTask", "ioSpecification", "dataInput", "dataOutput",
	"inputSet", "outputSet", "dataInputRefs", "dataOutputRefs", "resourceRole", "performer", "humanPerformer",
	"potentialOwner", "rendering", "script", "supportedInterfaceRef",
	"messageEventDefinition", "timerEventDefinition", "signalEventDefinition", "errorEventDefinition",
	"escalationEventDefinition", "terminateEventDefinition", "linkEventDefinition", "conditionalEventDefinition",
	"compensateEventDefinition", "cancelEventDefinition", "textAnnotation", "association", "group", "text",
)

// Collaboration children other than participants and message flows.
var ignoredCollab = set(
	"conversation", "conversationLink", "callConversation", "subConversation", "conversationNode",
	"participantAssociation", "messageFlowAssociation", "conversationAssociation", "correlationKey",
	"correlationPropertyRef", "messageFlowRef", "participantRef", "participantMultiplicity", "interfaceRef",
	"endPointRef", "textAnnotation", "text", "association", "group", "documentation", "extensionElements",
	"innerConversationNodeRef", "outerConversationNodeRef", "innerMessageFlowRef", "outerMessageFlowRef",
)

// Children of activities that resolve reads; container skips them.
var loopElements = set("multiInstanceLoopCharacteristics", "standardLoopCharacteristics", "completionCondition")

var taskTags = set("task", "serviceTask", "userTask", "scriptTask", "sendTask", "manualTask", "businessRuleTask")

var unsupportedNodes = map[string]string{
	"complexGateway":     "complex gateways are not supported",
	"implicitThrowEvent": "implicit throw events are not supported",
	"callChoreography":   "choreographies are not supported",
	"choreographyTask":   "choreographies are not supported",
	"subChoreography":    "choreographies are not supported",
}

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

func (l *loader) definitions(root *xelem) {
	var procs, collabs []*xelem
	for _, k := range root.kids {
		if k.space != nsBPMN {
			continue
		}
		switch k.local {
		case "process":
			procs = append(procs, k)
		case "collaboration":
			collabs = append(collabs, k)
		case "message":
			l.declare(k, l.messages)
			l.zeebeElsewhere(k, elemOf(k))
		case "signal":
			l.declare(k, l.signals)
			l.zeebeElsewhere(k, elemOf(k))
		case "error":
			l.declare(k, l.errs)
			l.zeebeElsewhere(k, elemOf(k))
		case "escalation":
			l.declare(k, l.escalations)
			l.zeebeElsewhere(k, elemOf(k))
		case "choreography", "globalConversation":
			l.problem(k.line, elemOf(k), "%ss are not supported", k.local)
		default:
			if !ignoredRoot[k.local] {
				l.problem(k.line, elemOf(k), "unsupported element <%s>", k.local)
			}
		}
	}
	if len(procs) == 0 {
		l.problem(root.line, "", "no <process> in the definitions")
		return
	}
	for _, px := range procs {
		p := &node{id: px.attr("id"), name: px.attr("name"), tag: "process", line: px.line, k: kProcess}
		p.proc = p
		if !l.register(px, p) {
			continue
		}
		l.m.procs = append(l.m.procs, p)
		l.procExecutable[p.id] = px.attr("isExecutable") == "true"
		l.zeebeElsewhere(px, p.elem())
		l.container(p, px)
	}
	for _, pf := range l.pendingFlows {
		l.flow(pf.x, pf.c)
	}
	for _, pn := range l.pendingNodes {
		l.resolve(pn.x, pn.n)
	}
	l.defaults()
	l.associations()
	for _, c := range collabs {
		l.collaboration(c)
	}
	for _, p := range l.m.procs {
		l.check(p)
	}
	if len(l.probs) > 0 {
		return
	}
	l.precompute()
	l.summary()
}

// elemOf renders an XML element for a problem.
func elemOf(x *xelem) string {
	if id := x.attr("id"); id != "" {
		return x.local + ` "` + id + `"`
	}
	return x.local
}

func (l *loader) declare(x *xelem, into map[string]*xelem) {
	id := x.attr("id")
	if id == "" {
		l.problem(x.line, x.local, "missing id")
		return
	}
	if line, dup := l.seen[id]; dup {
		l.problem(x.line, elemOf(x), "duplicate id (first used on line %d)", line)
		return
	}
	l.seen[id] = x.line
	into[id] = x
}

// register records n under its id; it reports false for a missing or
// duplicate id.
func (l *loader) register(x *xelem, n *node) bool {
	if n.id == "" {
		l.problem(x.line, x.local, "missing id")
		return false
	}
	if line, dup := l.seen[n.id]; dup {
		l.problem(x.line, n.elem(), "duplicate id (first used on line %d)", line)
		return false
	}
	l.seen[n.id] = x.line
	l.m.byID[n.id] = n
	return true
}

// container reads the flow elements of a process or sub-process.
func (l *loader) container(c *node, x *xelem) {
	for _, k := range x.kids {
		if k.space != nsBPMN {
			continue
		}
		if k.local == "sequenceFlow" {
			l.pendingFlows = append(l.pendingFlows, pendingFlow{k, c})
			continue
		}
		if k.local == "association" {
			l.pendingAssoc = append(l.pendingAssoc, k)
			continue
		}
		if msg, bad := unsupportedNodes[k.local]; bad {
			l.problem(k.line, elemOf(k), "%s", msg)
			l.rejected[k.attr("id")] = true
			continue
		}
		if ignored[k.local] || loopElements[k.local] {
			continue
		}
		n := l.flowNode(k, c)
		if n == nil {
			l.rejected[k.attr("id")] = true
			continue
		}
		if !l.register(k, n) {
			continue
		}
		c.children = append(c.children, n)
		l.pendingNodes = append(l.pendingNodes, pendingNode{k, n})
		if n.k.isContainer() {
			l.container(n, k)
		}
	}
}

// flowNode creates the node for a flow element, or reports it unsupported.
func (l *loader) flowNode(x *xelem, c *node) *node {
	n := &node{id: x.attr("id"), name: x.attr("name"), tag: x.local, line: x.line, parent: c, proc: c.proc}
	switch {
	case taskTags[x.local]:
		n.k = kTask
		n.step = true
	case x.local == "receiveTask":
		n.k = kReceiveTask
		if ref := x.attr("messageRef"); ref != "" {
			if decl, ok := l.messages[ref]; !ok {
				l.problem(x.line, elemOf(x), "messageRef %q names no <message>", ref)
			} else {
				n.hasRef, n.key, n.msgRef = true, ref, ref
				if v := decl.attr("name"); v != "" {
					n.key = v
				}
			}
		}
	case x.local == "subProcess":
		n.k = kSubProcess
		if x.attr("triggeredByEvent") == "true" {
			n.k = kEventSub
		}
	case x.local == "transaction":
		n.k = kSubProcess
	case x.local == "adHocSubProcess":
		// An empty ad-hoc sub-process has nothing to run and completes at
		// once; one with content needs run-time decisions the engine does
		// not make.
		for _, k := range x.kids {
			if k.space == nsBPMN && !ignored[k.local] && k.local != "completionCondition" {
				l.problem(x.line, elemOf(x), "ad-hoc sub-processes are not supported (only an empty one, which completes at once)")
				return nil
			}
		}
		n.k = kSubProcess
	case x.local == "callActivity":
		n.k = kCallActivity
	case x.local == "startEvent":
		n.k = kStart
	case x.local == "endEvent":
		n.k = kEnd
	case x.local == "intermediateCatchEvent":
		n.k = kCatch
	case x.local == "intermediateThrowEvent":
		n.k = kThrow
	case x.local == "boundaryEvent":
		n.k = kBoundary
	case x.local == "exclusiveGateway":
		n.k = kExclusive
	case x.local == "parallelGateway":
		n.k = kParallel
	case x.local == "inclusiveGateway":
		n.k = kInclusive
	case x.local == "eventBasedGateway":
		n.k = kEventGateway
	default:
		l.problem(x.line, elemOf(x), "unsupported element <%s>", x.local)
		return nil
	}
	return n
}

// resolve reads a node's attributes and children once every id is known.
func (l *loader) resolve(x *xelem, n *node) {
	if x.attr("isForCompensation") == "true" {
		n.forComp = true
	}
	var defs []*xelem
	for _, k := range x.kids {
		if k.space == nsBPMN {
			switch k.local {
			case "messageEventDefinition", "timerEventDefinition", "signalEventDefinition", "errorEventDefinition",
				"escalationEventDefinition", "terminateEventDefinition", "linkEventDefinition", "conditionalEventDefinition",
				"compensateEventDefinition", "cancelEventDefinition":
				defs = append(defs, k)
			case "eventDefinitionRef":
				l.problem(k.line, n.elem(), "shared event definitions (eventDefinitionRef) are not supported")
				n.badDef = true
			case "multiInstanceLoopCharacteristics":
				if n.k.isActivity() || n.k == kCallActivity {
					l.multi(k, n)
				} else {
					l.problem(k.line, n.elem(), "multi-instance is only allowed on activities")
				}
			case "standardLoopCharacteristics":
				l.problem(k.line, n.elem(), "standard loops are not supported (model the loop with a gateway, or use multi-instance)")
			case "condition":
				// conditional start event of an event sub-process, handled with its definition
			default:
				if n.k.isContainer() {
					continue // children of sub-processes were read by container
				}
				if !ignored[k.local] {
					l.problem(k.line, n.elem(), "unsupported element <%s>", k.local)
				}
			}
			continue
		}
		if k.local == "extensionElements" {
			continue
		}
	}
	for _, k := range x.kids {
		if k.isBPMN("extensionElements") {
			l.extensions(k, n)
		}
	}
	if len(defs) > 1 {
		l.problem(defs[1].line, n.elem(), "events with more than one event definition are not supported")
	} else if len(defs) == 1 {
		l.eventDef(defs[0], n)
	}
	switch n.k {
	case kBoundary:
		ref := x.attr("attachedToRef")
		host := l.m.byID[ref]
		switch {
		case ref == "":
			l.problem(x.line, n.elem(), "missing attachedToRef")
		case l.rejected[ref]:
			// already reported
		case host == nil:
			l.problem(x.line, n.elem(), "attachedToRef %q names no element", ref)
		case !host.k.isActivity() && host.k != kCallActivity:
			l.problem(x.line, n.elem(), "attached to %s, which is not an activity", host.elem())
		case host.parent != n.parent:
			l.problem(x.line, n.elem(), "attached to %s in another scope", host.elem())
		default:
			n.attached = host
			host.boundaries = append(host.boundaries, n)
		}
		n.interrupting = x.attr("cancelActivity") != "false"
	case kStart:
		n.interrupting = x.attr("isInterrupting") != "false" && n.ev != evCompensate
	case kCallActivity:
		id := x.attr("calledElement")
		line := x.line
		for _, e := range x.kids {
			if e.local == "extensionElements" {
				for _, z := range e.kids {
					if z.space == nsZeebe && z.local == "calledElement" {
						if pid := z.attr("processId"); pid != "" {
							id, line = pid, z.line
						}
					}
				}
			}
		}
		switch p := l.m.byID[id]; {
		case id == "":
			l.problem(x.line, n.elem(), "missing calledElement (the id of the process to call)")
		case strings.HasPrefix(id, "="):
			l.problem(line, n.elem(), "calledElement %q: dynamic process ids are not supported", id)
		case p == nil || p.k != kProcess:
			l.problem(line, n.elem(), "calledElement %q names no process in this file", id)
		default:
			n.called = p
		}
	}
}

// extensions reads the vendor extensions of a flow node: Zeebe's (see
// zeebe.go) and the names of Camunda 7 input/output parameters.
func (l *loader) extensions(x *xelem, n *node) {
	for _, e := range x.kids {
		switch {
		case e.space == nsZeebe:
			l.zeebeExtension(e, n)
		case e.space == nsCamunda && e.local == "inputOutput":
			for _, io := range e.kids {
				switch io.local {
				case "inputParameter":
					n.io.Inputs = appendName(n.io.Inputs, io.attr("name"))
				case "outputParameter":
					n.io.Outputs = appendName(n.io.Outputs, io.attr("name"))
				}
			}
		}
	}
}

func appendName(list []string, name string) []string {
	if name == "" {
		return list
	}
	for _, s := range list {
		if s == name {
			return list
		}
	}
	return append(list, name)
}

// eventDef reads an event definition into n.ev, n.key and n.hasRef.
func (l *loader) eventDef(d *xelem, n *node) {
	refName := func(attr string, decls map[string]*xelem, what, codeAttr string) {
		ref := d.attr(attr)
		if ref == "" {
			return
		}
		decl, ok := decls[ref]
		if !ok {
			l.problem(d.line, n.elem(), "%s %q names no <%s>", attr, ref, what)
			return
		}
		n.hasRef = true
		n.key = ref
		if what == "message" {
			n.msgRef = ref
		}
		if v := decl.attr(codeAttr); v != "" {
			n.key = v
		}
	}
	switch d.local {
	case "messageEventDefinition":
		n.ev = evMessage
		refName("messageRef", l.messages, "message", "name")
	case "timerEventDefinition":
		n.ev = evTimer
		for _, t := range d.kids {
			if !t.isBPMN("timeDate") && !t.isBPMN("timeDuration") && !t.isBPMN("timeCycle") {
				continue
			}
			v := strings.TrimSpace(t.text)
			if c, err := checkTimer(t.local, v); err != nil {
				l.problem(t.line, n.elem(), "%s %q: %v", t.local, v, err)
			} else if c != nil {
				l.note(c)
				n.timerExpr = c
				l.exprs = append(l.exprs, sdk.Expression{Element: n.elem(), Line: t.line, What: t.local, Text: v})
			}
			n.timer = t.local + " " + v
			n.timerKind = t.local
			if v == "" {
				l.problem(t.line, n.elem(), "%s has no value", t.local)
			}
		}
		if n.timerKind == "" {
			// Zeebe refuses such a timer at deploy: it would never fire.
			l.problem(d.line, n.elem(), "timerEventDefinition has no timeDate, timeDuration or timeCycle")
		}
	case "signalEventDefinition":
		n.ev = evSignal
		refName("signalRef", l.signals, "signal", "name")
	case "errorEventDefinition":
		n.ev = evError
		refName("errorRef", l.errs, "error", "errorCode")
	case "escalationEventDefinition":
		n.ev = evEscalation
		refName("escalationRef", l.escalations, "escalation", "escalationCode")
	case "terminateEventDefinition":
		n.ev = evTerminate
	case "linkEventDefinition":
		n.ev = evLink
		n.key = d.attr("name")
	case "compensateEventDefinition":
		n.ev = evCompensate
		n.compNoWait = d.attr("waitForCompletion") == "false"
		if ref := d.attr("activityRef"); ref != "" {
			a := l.m.byID[ref]
			switch {
			case a == nil || !(a.k.isActivity() || a.k == kCallActivity):
				l.problem(d.line, n.elem(), "activityRef %q names no activity", ref)
			default:
				n.compRef = a
			}
		}
	case "cancelEventDefinition":
		n.ev = evCancel
	case "conditionalEventDefinition":
		n.ev = evConditional
		if c := d.kid("condition"); c != nil && strings.TrimSpace(c.text) != "" {
			if _, err := l.cond(c.text); err != nil {
				l.problem(c.line, n.elem(), "condition %q: %v", strings.TrimSpace(c.text), err)
			} else {
				// The host evaluates it: give it plain FEEL (no "=", JUEL translated).
				n.condition, _ = feelText(strings.TrimSpace(c.text))
				l.exprs = append(l.exprs, sdk.Expression{Element: n.elem(), Line: c.line, What: "condition", Text: strings.TrimSpace(c.text)})
			}
		} else {
			// Zeebe refuses it at deploy: it could never become true.
			l.problem(d.line, n.elem(), "conditionalEventDefinition has no condition")
		}
	}
}

var (
	isoWeeks = regexp.MustCompile(`^P\d{1,6}W$`)
	cronExpr = regexp.MustCompile(`^(\S+\s+){4,6}\S+$`)
	isoZone  = regexp.MustCompile(`^(.*?[0-9])(Z|[+-]\d{2}:?\d{2})?\[([A-Za-z_+\-/0-9]+)\]$`)

	feelDuration = feel.MustParse(`duration(v)`)
	feelDateTime = feel.MustParse(`date and time(v)`)
)

// isExpr reports whether a timer value is an expression.
func isExpr(v string) bool {
	return strings.HasPrefix(v, "=") || strings.HasPrefix(v, "${") || strings.HasPrefix(v, "#{")
}

// checkTimer validates a timer value as Zeebe reads it: an ISO 8601
// duration (PT30S, P1DT2H), date-time (2026-01-02T15:04:05Z, also with a
// [Region/City] zone) or repetition (R3/PT10M, R/PT1H,
// R2/2026-01-02T00:00:00Z/P1D), a cron expression for cycles, or a FEEL
// expression (=...), which is parsed here and evaluated when the timer
// starts.
func checkTimer(kind, v string) (*cond, error) {
	if v == "" {
		return nil, nil
	}
	if isExpr(v) {
		return compileCond(v)
	}
	switch kind {
	case "timeDuration":
		if !isDuration(v) {
			return nil, fmt.Errorf("not an ISO 8601 duration (like PT30S)")
		}
	case "timeDate":
		if !isDateTime(v) {
			return nil, fmt.Errorf("not an ISO 8601 date-time (like 2026-01-02T15:04:05Z)")
		}
	case "timeCycle":
		if cronExpr.MatchString(v) {
			return nil, fmt.Errorf("cron cycles are not supported; write an ISO 8601 repetition (like R/P1D, R3/PT10M or R/2026-01-05T09:00:00Z/P1D)")
		}
		if !isCycle(v) {
			return nil, fmt.Errorf("not an ISO 8601 repetition (like R3/PT10M)")
		}
	}
	return nil, nil
}

// isDuration reports whether v is an ISO 8601 duration, as FEEL's
// duration() reads it.
func isDuration(v string) bool {
	if isoWeeks.MatchString(v) {
		return true // ISO 8601 weeks, which FEEL's durations lack
	}
	d, err := feelDuration.Eval(map[string]any{"v": v})
	return err == nil && d != nil
}

// isDateTime reports whether v is an ISO 8601 date-time (or a date), as
// FEEL's date and time() reads it; a [Region/City] suffix names the zone.
func isDateTime(v string) bool {
	if m := isoZone.FindStringSubmatch(v); m != nil {
		v = m[1] + "@" + m[3]
	}
	d, err := feelDateTime.Eval(map[string]any{"v": v})
	return err == nil && d != nil
}

// isCycle reports whether v is an ISO 8601 repetition: R[n]/duration,
// R[n]/start/duration or R[n]/duration/end.
func isCycle(v string) bool {
	parts := strings.Split(v, "/")
	if len(parts) < 2 || len(parts) > 3 || !strings.HasPrefix(parts[0], "R") {
		return false
	}
	if n := parts[0][1:]; n != "" {
		for _, c := range n {
			if c < '0' || c > '9' {
				return false
			}
		}
		if len(n) > 9 {
			return false
		}
	}
	if len(parts) == 2 {
		return isDuration(parts[1])
	}
	return isDateTime(parts[1]) && isDuration(parts[2]) || isDuration(parts[1]) && isDateTime(parts[2])
}

// multi reads multi-instance loop characteristics.
func (l *loader) multi(x *xelem, n *node) {
	mi := &multi{sequential: x.attr("isSequential") == "true"}
	given := false // an input collection or cardinality was written
	compile := func(line int, what, src string) *cond {
		if strings.TrimSpace(src) == "" {
			return nil
		}
		if what != "outputElement" {
			given = true
		}
		c, err := l.cond(src)
		if err != nil {
			l.problem(line, n.elem(), "%s %q: %v", what, strings.TrimSpace(src), err)
			return nil
		}
		l.exprs = append(l.exprs, sdk.Expression{Element: n.elem(), Line: line, What: what, Text: strings.TrimSpace(src)})
		return c
	}
	if v := x.nsAttr(nsCamunda, "collection"); v != "" {
		mi.collection = compile(x.line, "collection", v)
		mi.element = x.nsAttr(nsCamunda, "elementVariable")
	}
	for _, k := range x.kids {
		switch {
		case k.isBPMN("loopCardinality"):
			mi.cardinal = compile(k.line, "loopCardinality", k.text)
		case k.isBPMN("completionCondition"):
			if strings.TrimSpace(k.text) != "" {
				c, err := l.cond(k.text)
				if err != nil {
					l.problem(k.line, n.elem(), "completionCondition %q: %v", strings.TrimSpace(k.text), err)
				} else {
					l.exprs = append(l.exprs, sdk.Expression{Element: n.elem(), Line: k.line, What: "completionCondition", Text: strings.TrimSpace(k.text)})
				}
				mi.completion = c
			}
		case k.isBPMN("loopDataInputRef"), k.isBPMN("loopDataOutputRef"), k.isBPMN("inputDataItem"), k.isBPMN("outputDataItem"):
			l.problem(k.line, n.elem(), "<%s> is not supported (use zeebe:loopCharacteristics inputCollection/outputCollection)", k.local)
		case k.isBPMN("complexBehaviorDefinition"):
			l.problem(k.line, n.elem(), "complex multi-instance behavior is not supported")
		case k.isBPMN("extensionElements"):
			for _, z := range k.kids {
				if z.space == nsZeebe && z.local == "loopCharacteristics" {
					mi.collection = compile(z.line, "inputCollection", z.attr("inputCollection"))
					mi.element = z.attr("inputElement")
					mi.outColl = z.attr("outputCollection")
					mi.outElem = compile(z.line, "outputElement", z.attr("outputElement"))
				}
			}
		}
	}
	if !given {
		l.problem(x.line, n.elem(), "multi-instance needs an input collection or a loopCardinality")
	}
	if mi.outColl != "" {
		n.io.Outputs = appendName(n.io.Outputs, mi.outColl)
	}
	n.mi = mi
}

// flow reads a sequence flow of container c.
func (l *loader) flow(x *xelem, c *node) {
	f := &flow{id: x.attr("id"), line: x.line}
	el := elemOf(x)
	if f.id == "" {
		l.problem(x.line, "sequenceFlow", "missing id")
		return
	}
	if line, dup := l.seen[f.id]; dup {
		l.problem(x.line, el, "duplicate id (first used on line %d)", line)
		return
	}
	l.seen[f.id] = x.line
	ok := true
	end := func(attr string) *node {
		ref := x.attr(attr)
		n := l.m.byID[ref]
		switch {
		case ref == "":
			l.problem(x.line, el, "missing %s", attr)
		case l.rejected[ref]:
			// already reported
		case n == nil || n.k == kProcess:
			l.problem(x.line, el, "%s %q names no flow node", attr, ref)
		case n.parent != c:
			l.problem(x.line, el, "%s %q is in another scope", attr, ref)
		default:
			return n
		}
		ok = false
		return nil
	}
	f.src, f.dst = end("sourceRef"), end("targetRef")
	l.zeebeElsewhere(x, el)
	for _, k := range x.kids {
		if !k.isBPMN("conditionExpression") {
			if k.space == nsBPMN && !ignored[k.local] {
				l.problem(k.line, el, "unsupported element <%s>", k.local)
			}
			continue
		}
		src := strings.TrimSpace(k.text)
		if src == "" {
			continue
		}
		if lang := k.attr("language"); lang != "" && !exprLanguage(lang) {
			l.problem(k.line, el, "condition language %q is not supported (write a FEEL expression, optionally prefixed with =)", lang)
			continue
		}
		cnd, err := l.cond(src)
		if err != nil {
			l.problem(k.line, el, "condition %q: %v", src, err)
			continue
		}
		f.cond = cnd
		l.exprs = append(l.exprs, sdk.Expression{Element: el, Line: k.line, What: "condition", Text: src})
	}
	if !ok {
		return
	}
	f.parked = map[string]any{attrFlow: f.id}
	l.m.flows[f.id] = f
	f.src.out = append(f.src.out, f)
	f.dst.in = append(f.dst.in, f)
}

func exprLanguage(lang string) bool {
	switch strings.ToLower(lang) {
	case "feel", "juel", "http://www.omg.org/spec/feel/20140401", "https://www.omg.org/spec/dmn/20191111/feel/",
		"https://www.omg.org/spec/dmn/20230324/feel/", "http://www.omg.org/spec/dmn/20151101/feel":
		return true
	}
	return false
}

// collaboration reads participants and message flows.
func (l *loader) collaboration(x *xelem) {
	for _, k := range x.kids {
		if k.space != nsBPMN {
			continue
		}
		switch k.local {
		case "participant":
			id := k.attr("id")
			if id != "" {
				if line, dup := l.seen[id]; dup {
					l.problem(k.line, elemOf(k), "duplicate id (first used on line %d)", line)
				}
				l.seen[id] = k.line
				l.participants[id] = k
			}
			if ref := k.attr("processRef"); ref != "" {
				if p := l.m.byID[ref]; p == nil || p.k != kProcess {
					l.problem(k.line, elemOf(k), "processRef %q names no process", ref)
				}
			}
		case "messageFlow":
			src, dst := k.attr("sourceRef"), k.attr("targetRef")
			sn, dn := l.m.byID[src], l.m.byID[dst]
			_, sp := l.participants[src]
			_, dp := l.participants[dst]
			if sn == nil && !sp && !l.isParticipant(x, src) {
				l.problem(k.line, elemOf(k), "sourceRef %q names no flow node or participant", src)
				continue
			}
			if dn == nil && !dp && !l.isParticipant(x, dst) {
				l.problem(k.line, elemOf(k), "targetRef %q names no flow node or participant", dst)
				continue
			}
			if dn != nil && dn.k == kProcess {
				dn = nil
			}
			if sn != nil && sn.k != kProcess && dn != nil {
				sn.msgOut = append(sn.msgOut, dn)
			}
			if dn != nil && dn.k == kTask {
				dn.msgIn = true
			}
		default:
			if !ignoredCollab[k.local] && !ignored[k.local] {
				l.problem(k.line, elemOf(k), "unsupported element <%s>", k.local)
			}
		}
	}
}

func (l *loader) isParticipant(collab *xelem, id string) bool {
	for _, k := range collab.kids {
		if k.isBPMN("participant") && k.attr("id") == id {
			return true
		}
	}
	return false
}

// check validates the structure of container c and everything inside it.
func (l *loader) check(c *node) {
	linkCatches := map[string]bool{}
	for _, n := range c.children {
		if n.k == kCatch && n.ev == evLink {
			linkCatches[n.key] = true
		}
	}
	for _, n := range c.children {
		l.checkNode(n, c, linkCatches)
		if n.k.isContainer() {
			l.check(n)
		}
	}
	for _, n := range c.children {
		switch n.k {
		case kStart:
			c.allStarts = append(c.allStarts, n)
			if n.ev == evNone {
				c.starts = append(c.starts, n)
			}
		case kEventSub:
			c.eventSubs = append(c.eventSubs, n)
		}
	}
}

func (l *loader) checkNode(n, c *node, linkCatches map[string]bool) {
	bad := func(format string, args ...any) { l.problem(n.line, n.elem(), format, args...) }
	evOK := func(allowed ...evKind) {
		if n.badDef {
			return
		}
		for _, a := range allowed {
			if a == n.ev {
				return
			}
		}
		where := ""
		if n.k == kStart {
			switch c.k {
			case kEventSub:
				where = " in an event sub-process"
			case kSubProcess:
				where = " in a sub-process"
			}
		}
		if n.ev == evNone {
			bad("needs an event definition here")
		} else {
			bad("%s %s%s is not supported", n.ev, n.tag, where)
		}
	}
	switch n.k {
	case kStart:
		switch c.k {
		case kProcess:
			evOK(evNone, evMessage, evTimer, evSignal, evConditional)
		case kEventSub:
			evOK(evMessage, evTimer, evSignal, evConditional, evError, evEscalation, evCompensate)
			if n.ev == evCompensate {
				if c.compStart != nil {
					bad("an event sub-process has one compensation start event")
				}
				c.compStart = n
				if c.parent.compSub != nil && c.parent.compSub != c {
					bad("a scope has one compensation event sub-process")
				}
				c.parent.compSub = c
			}
			if n.ev == evError && !n.interrupting {
				bad("error start events always interrupt (remove isInterrupting=\"false\")")
			}
		default:
			evOK(evNone)
		}
		if len(n.in) > 0 {
			bad("start events cannot have incoming sequence flows")
		}
	case kEnd:
		evOK(evNone, evTerminate, evError, evEscalation, evSignal, evMessage, evCompensate, evCancel)
		if n.ev == evCancel {
			switch {
			case c.tag != "transaction":
				bad("cancel end events are only allowed inside a transaction")
			case findBoundary(c, evCancel, "") == nil:
				bad("%s has no cancel boundary event to catch the cancellation", c.elem())
			}
		}
		if len(n.out) > 0 {
			bad("end events cannot have outgoing sequence flows")
		}
	case kThrow:
		evOK(evNone, evSignal, evEscalation, evMessage, evLink, evCompensate)
		if n.ev == evLink && !linkCatches[n.key] {
			bad("no link catch event named %q in the same scope", n.key)
		}
	case kCatch:
		evOK(evNone, evMessage, evTimer, evSignal, evLink, evConditional)
		if n.ev == evLink && len(n.in) > 0 {
			bad("link catch events cannot have incoming sequence flows")
		}
	case kBoundary:
		evOK(evNone, evMessage, evTimer, evSignal, evError, evEscalation, evConditional, evCompensate, evCancel)
		if n.ev == evCancel && n.attached != nil && n.attached.tag != "transaction" {
			bad("cancel boundary events attach to transactions, not to %s", n.attached.elem())
		}
		if n.ev == evCompensate {
			if len(n.out) > 0 {
				bad("compensation boundary events cannot have outgoing sequence flows (associate the handler instead)")
			}
			if n.attached != nil {
				n.attached.compBound = true
			}
		}
		if len(n.in) > 0 {
			bad("boundary events cannot have incoming sequence flows")
		}
		if n.ev == evError && !n.interrupting {
			bad("error boundary events always interrupt (remove cancelActivity=\"false\")")
		}
	default:
		if n.ev != evNone {
			bad("unexpected %s event definition", n.ev)
		}
	}
	if n.forComp && (len(n.in) > 0 || len(n.out) > 0) {
		bad("compensation handlers cannot have sequence flows")
	}
	if n.ev == evCompensate && n.compRef != nil && (n.k == kThrow || n.k == kEnd) {
		scope := c
		for scope.k == kEventSub && n.compRef.parent != scope {
			scope = scope.parent
		}
		if n.compRef.parent != scope {
			bad("activityRef %q is not an activity of this scope", n.compRef.id)
		}
	}
	switch n.k {
	case kExclusive, kInclusive, kEventGateway:
		// A parallel gateway without outgoing flows is a join that ends
		// (an implicit end); a deciding gateway without one is a mistake.
		if len(n.out) == 0 {
			bad("no outgoing sequence flow")
		}
	}
	if n.k == kParallel || n.k == kEventGateway {
		for _, f := range n.out {
			if f.cond != nil {
				l.problem(f.line, `sequenceFlow "`+f.id+`"`, "flows leaving a %s cannot have conditions", n.tag)
			}
		}
	}
	if n.k == kEventGateway {
		for _, f := range n.out {
			t := f.dst
			ok := t.k == kReceiveTask || (t.k == kCatch && t.ev != evLink)
			if !ok {
				l.problem(f.line, `sequenceFlow "`+f.id+`"`, "an eventBasedGateway may only lead to intermediate catch events or receive tasks, not to %s", t.elem())
				continue
			}
			n.targets = append(n.targets, t)
		}
	}
	if n.k == kEventSub {
		if len(n.in) > 0 || len(n.out) > 0 {
			bad("event sub-processes cannot have sequence flows")
		}
		if len(n.boundaries) > 0 {
			bad("event sub-processes cannot have boundary events")
		}
		starts := 0
		for _, s := range n.children {
			if s.k == kStart {
				starts++
			}
		}
		if starts == 0 {
			bad("event sub-process needs a start event")
		}
	}
}

// associations links compensation boundary events to their handlers.
func (l *loader) associations() {
	for _, x := range l.pendingAssoc {
		src, dst := l.m.byID[x.attr("sourceRef")], l.m.byID[x.attr("targetRef")]
		if src == nil || dst == nil {
			continue // associations to annotations and data are decoration
		}
		if src.k == kBoundary && src.ev == evCompensate && src.attached != nil {
			if !dst.forComp {
				l.problem(x.line, elemOf(x), "a compensation boundary event must be associated with an activity marked isForCompensation=\"true\", not %s", dst.elem())
				continue
			}
			src.attached.compHandler = dst
		}
	}
}

// defaults resolves default flows once every flow is known.
func (l *loader) defaults() {
	for _, pn := range l.pendingNodes {
		n := pn.n
		ref := pn.x.attr("default")
		if ref == "" {
			continue
		}
		f := l.m.flows[ref]
		if f == nil || f.src != n {
			l.problem(pn.x.line, n.elem(), "default flow %q is not an outgoing sequence flow of this element", ref)
			continue
		}
		if f.cond != nil {
			l.problem(f.line, `sequenceFlow "`+f.id+`"`, "the default flow of %s cannot have a condition", n.elem())
		}
		if n.k == kParallel || n.k == kEventGateway {
			l.problem(pn.x.line, n.elem(), "a %s has no default flow", n.tag)
		}
		n.def = f
	}
}

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

// summary builds the sdk.Routine.
func (l *loader) summary() {
	m := l.m
	// The main process: the first executable one that a none start event
	// starts, else the first with a none start event, else the first.
	for _, p := range m.procs {
		if len(p.starts) > 0 && l.executable(p) {
			m.main = p
			break
		}
	}
	if m.main == nil {
		for _, p := range m.procs {
			if len(p.starts) > 0 {
				m.main = p
				break
			}
		}
	}
	if m.main == nil {
		m.main = m.procs[0]
	}
	r := &sdk.Routine{Hash: m.hash, ID: m.main.id, Expressions: l.exprs, Reads: l.reads.Reads()}
	ordered := append([]*node{m.main}, m.procs...)
	done := map[*node]bool{}
	for _, p := range ordered {
		if done[p] {
			continue
		}
		done[p] = true
		for _, s := range p.starts {
			r.Starts = append(r.Starts, s.id)
		}
		for _, s := range p.allStarts {
			if s.ev != evNone {
				r.Starts = append(r.Starts, s.id)
			}
		}
		if len(p.allStarts) == 0 {
			for _, s := range p.implicit {
				r.Starts = append(r.Starts, s.id)
			}
		}
	}
	var walk func(c *node)
	walk = func(c *node) {
		for _, n := range c.children {
			r.Nodes = append(r.Nodes, sdk.Node{ID: n.id, Name: n.name, Kind: n.tag, Line: n.line, Step: n.step,
				Type: n.taskType, Inputs: n.io.Inputs, Outputs: n.io.Outputs, Event: n.eventDef()})
			if n.k.isContainer() {
				walk(n)
			}
		}
	}
	for _, p := range m.procs {
		walk(p)
	}
	m.routine = r
}

// eventDef tells the host what fires n, when the host delivers it.
func (n *node) eventDef() *sdk.EventDef {
	var d *sdk.EventDef
	switch {
	case n.ev == evTimer:
		d = &sdk.EventDef{Type: sdk.EventTimer, Timer: n.timer}
	case n.ev == evMessage || n.k == kReceiveTask:
		d = &sdk.EventDef{Type: sdk.EventMessage, Name: n.key}
	case n.ev == evSignal:
		d = &sdk.EventDef{Type: sdk.EventSignal, Name: n.key}
	case n.ev == evConditional:
		d = &sdk.EventDef{Type: sdk.EventConditional, Condition: n.condition}
	default:
		return nil
	}
	d.Interrupting = n.attached != nil && n.interrupting
	return d
}

func (l *loader) executable(p *node) bool { return l.procExecutable[p.id] }
