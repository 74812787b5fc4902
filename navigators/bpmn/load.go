package bpmn

import (
	"fmt"
	"sort"
	"strings"

	"github.com/sextant-dev/sextant/navigators/internal/reads"
	"github.com/sextant-dev/sextant/sdk"
)

// loader turns a definitions document into a model, collecting every
// problem with its line. It works in passes over the parsed XML (xml.go):
// definitions and container create the nodes (load_node.go); once every id
// is known, resolve reads their references and event definitions
// (load_node.go, load_event.go) and the sequence and message flows are
// linked (load_flow.go); check validates each element family (check.go);
// precompute and summary derive what the engine and the host read
// (precompute.go, summary.go).
type loader struct {
	file  string
	probs []sdk.Problem
	m     *model
	dmn   []dmnFile // the decision files business rule tasks may call

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
	// exprs are the expressions written in the routine, for the summary,
	// and exprConds each one's parsed form.
	exprs     []sdk.Expression
	exprConds []*cond
}

type pendingFlow struct {
	x *xelem
	c *node
}

type pendingNode struct {
	x *xelem
	n *node
}

// cond compiles an expression of the routine (compileCond) and notes
// what it reads.
func (l *loader) cond(src string) (*cond, error) {
	c, err := compileCond(src)
	if err == nil {
		l.note(c)
	}
	return c, err
}

// expr compiles expression src of element el, written at line (what
// names it in problems and in the summary: "condition", "loopCardinality",
// ...), and lists it in the summary. A bad expression is a problem, and nil.
func (l *loader) expr(line int, el, what, src string) *cond {
	src = strings.TrimSpace(src)
	c, err := l.cond(src)
	if err != nil {
		l.problem(line, el, "%s %q: %v", what, src, err)
		return nil
	}
	l.listExpr(sdk.Expression{Element: el, Line: line, What: what, Text: src}, c)
	return c
}

// listExpr lists expression e, parsed as c, in the summary.
func (l *loader) listExpr(e sdk.Expression, c *cond) {
	l.exprs = append(l.exprs, e)
	l.exprConds = append(l.exprConds, c)
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

// problem records a positioned problem.
func (l *loader) problem(line int, element, format string, args ...any) {
	l.probs = append(l.probs, sdk.Problem{File: l.file, Line: line, Element: element, Message: fmt.Sprintf(format, args...)})
}

// load parses and validates data, whose business rule tasks call
// decisions of files. It never panics on any input.
func load(name string, data []byte, files []dmnFile, hash string) (m *model, err error) {
	defer func() {
		if r := recover(); r != nil {
			m = nil
			err = sdk.Invalid(sdk.Problem{File: name, Message: fmt.Sprintf("internal error while loading: %v", r)})
		}
	}()
	l := &loader{
		file:         name,
		dmn:          files,
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
	l.m = &model{hash: hash, file: name, byID: map[string]*node{}, flows: map[string]*flow{}}
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
	procs, collabs := l.roots(root)
	if len(procs) == 0 {
		l.problem(root.line, "", "no <process> in the definitions")
		return
	}
	for _, px := range procs {
		l.process(px)
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
	l.m.internIDs()
	l.precompute()
	l.summary()
}

// roots reads the root elements of the definitions: it declares messages,
// signals, errors and escalations, and returns the processes and
// collaborations for the passes that follow.
func (l *loader) roots(root *xelem) (procs, collabs []*xelem) {
	decls := map[string]map[string]*xelem{"message": l.messages, "signal": l.signals, "error": l.errs, "escalation": l.escalations}
	for _, k := range root.kids {
		if k.space != nsBPMN {
			continue
		}
		if into, ok := decls[k.local]; ok {
			l.declare(k, into)
			l.zeebeElsewhere(k, elemOf(k))
			continue
		}
		switch k.local {
		case "process":
			procs = append(procs, k)
		case "collaboration":
			collabs = append(collabs, k)
		case "choreography", "globalConversation":
			l.problem(k.line, elemOf(k), "%ss are not supported", k.local)
		default:
			if !ignoredRoot[k.local] {
				l.problem(k.line, elemOf(k), "unsupported element <%s>", k.local)
			}
		}
	}
	return procs, collabs
}

// process reads process px and everything inside it.
func (l *loader) process(px *xelem) {
	p := &node{id: px.attr("id"), name: px.attr("name"), tag: "process", line: px.line, k: kProcess}
	p.proc = p
	if !l.register(px, p) {
		return
	}
	l.m.procs = append(l.m.procs, p)
	l.procExecutable[p.id] = px.attr("isExecutable") == "true"
	l.zeebeElsewhere(px, p.elem())
	l.container(p, px)
}

// elemOf renders an XML element for a problem.
func elemOf(x *xelem) string {
	if id := x.attr("id"); id != "" {
		return x.local + ` "` + id + `"`
	}
	return x.local
}

// claim takes the id of element x; it reports a missing or duplicate id,
// and false.
func (l *loader) claim(x *xelem) bool {
	id := x.attr("id")
	if id == "" {
		l.problem(x.line, x.local, "missing id")
		return false
	}
	if line, dup := l.seen[id]; dup {
		l.problem(x.line, elemOf(x), "duplicate id (first used on line %d)", line)
		return false
	}
	l.seen[id] = x.line
	return true
}

// declare records declaration x (a message, signal, error or escalation)
// under its id.
func (l *loader) declare(x *xelem, into map[string]*xelem) {
	if l.claim(x) {
		into[x.attr("id")] = x
	}
}

// register records n under its id; it reports false for a missing or
// duplicate id.
func (l *loader) register(x *xelem, n *node) bool {
	if !l.claim(x) {
		return false
	}
	l.m.byID[n.id] = n
	return true
}
