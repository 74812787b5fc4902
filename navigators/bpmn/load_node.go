package bpmn

import (
	"strings"
)

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

// nodeKinds are the kinds of the flow elements that need nothing more
// than their kind; flowNode reads the others.
var nodeKinds = map[string]kind{
	"transaction": kSubProcess, "callActivity": kCallActivity,
	"startEvent": kStart, "endEvent": kEnd, "intermediateCatchEvent": kCatch, "intermediateThrowEvent": kThrow,
	"boundaryEvent": kBoundary, "exclusiveGateway": kExclusive, "parallelGateway": kParallel,
	"inclusiveGateway": kInclusive, "eventBasedGateway": kEventGateway,
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
		l.eventRef(x, elemOf(x), n, "messageRef", l.messages, "message", "name")
	case x.local == "subProcess":
		n.k = kSubProcess
		if x.attr("triggeredByEvent") == "true" {
			n.k = kEventSub
		}
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
	default:
		k, ok := nodeKinds[x.local]
		if !ok {
			l.problem(x.line, elemOf(x), "unsupported element <%s>", x.local)
			return nil
		}
		n.k = k
	}
	return n
}

// resolve reads a node's attributes and children once every id is known.
func (l *loader) resolve(x *xelem, n *node) {
	if x.attr("isForCompensation") == "true" {
		n.forComp = true
	}
	defs := l.nodeKids(x, n)
	for _, k := range x.kids {
		if k.isBPMN("extensionElements") {
			l.extensions(k, n)
		}
	}
	l.unsupportedAttrs(x, n)
	if x.nsAttr(nsCamunda, "decisionRef") != "" {
		l.problem(x.line, n.elem(), "camunda:decisionRef is not run (call the decision with zeebe:calledDecision)")
	}
	if len(defs) > 1 {
		l.problem(defs[1].line, n.elem(), "events with more than one event definition are not supported")
	} else if len(defs) == 1 {
		l.eventDef(defs[0], n)
	}
	switch n.k {
	case kBoundary:
		l.attach(x, n)
	case kStart:
		n.interrupting = x.attr("isInterrupting") != "false" && n.ev != evCompensate
	case kCallActivity:
		l.callee(x, n)
	}
}

// nodeKids reads the BPMN children of n that container does not: loop
// characteristics, and the event definitions, which it returns.
func (l *loader) nodeKids(x *xelem, n *node) []*xelem {
	var defs []*xelem
	for _, k := range x.kids {
		if k.space != nsBPMN {
			continue
		}
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
	}
	return defs
}

// attach attaches boundary event n to the activity its attachedToRef
// names, which must share its scope.
func (l *loader) attach(x *xelem, n *node) {
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
}

// callee resolves the process call activity n calls: its calledElement,
// or the processId of a zeebe:calledElement, which wins.
func (l *loader) callee(x *xelem, n *node) {
	id := x.attr("calledElement")
	line := x.line
	for _, e := range x.kids {
		if e.local == "extensionElements" {
			for _, z := range e.kids {
				if z.space == nsZeebe && z.local == "calledElement" {
					if pid := z.attr("processId"); pid != "" {
						id, line = pid, z.line
					}
					l.calledElementOptions(z, n)
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

// unsupportedAttrs refuses the BPMN attributes of a flow node that would
// change where tokens go, which the engine does not do: token quantities
// other than 1, instantiating gateways and receive tasks, parallel
// event-based gateways. Tools write the defaults (startQuantity="1") on
// every activity; those load.
func (l *loader) unsupportedAttrs(x *xelem, n *node) {
	const oneToken = "an activity starts for each token that arrives, and sends one token down each outgoing flow"
	const instantiate = "start the process with a message or timer start event"
	for _, a := range []struct{ name, ok, hint string }{
		{"startQuantity", "1", oneToken},
		{"completionQuantity", "1", oneToken},
	} {
		if v := strings.TrimSpace(x.attr(a.name)); v != "" && v != a.ok {
			l.problem(x.line, n.elem(), "%s=%q is not supported (%s)", a.name, v, a.hint)
		}
	}
	if (n.k == kEventGateway || n.k == kReceiveTask) && x.attr("instantiate") == "true" {
		l.problem(x.line, n.elem(), "instantiate=\"true\" is not supported (%s)", instantiate)
	}
	if n.k == kEventGateway && x.attr("eventGatewayType") == "Parallel" {
		l.problem(x.line, n.elem(), "eventGatewayType=\"Parallel\" is not supported (the first event to occur wins)")
	}
}

// calledElementOptions refuses the zeebe:calledElement options that would
// make Zeebe take another path than the navigator does: it shares every
// variable between caller and called process both ways, and calls the
// process of the same file.
func (l *loader) calledElementOptions(z *xelem, n *node) {
	for _, o := range []struct{ attr, hint string }{
		{"propagateAllChildVariables", "the caller sees every variable the called process writes"},
		{"propagateAllParentVariables", "the called process sees every variable of the caller"},
	} {
		if z.attr(o.attr) == "false" {
			l.problem(z.line, n.elem(), "zeebe:calledElement %s=\"false\" is not supported (%s)", o.attr, o.hint)
		}
	}
	if b := z.attr("bindingType"); b != "" && b != "latest" && b != "deployment" {
		l.problem(z.line, n.elem(), "zeebe:calledElement bindingType %q is not supported (the file's own process is the only version)", b)
	}
}

// extensions reads the vendor extensions of a flow node: Zeebe's (see
// zeebe.go) and the names of Camunda 7 input/output parameters.
func (l *loader) extensions(x *xelem, n *node) {
	for _, e := range x.kids {
		switch {
		case e.space == nsZeebe:
			l.zeebeExtension(e, n)
			if n.decision != nil && n.taskType != "" {
				l.problem(e.line, n.elem(), "zeebe:calledDecision and zeebe:taskDefinition: a business rule task either calls a decision or runs a job, not both")
				n.decision = nil
			}
		case e.space == nsCamunda:
			l.camunda7(e, n.elem())
		}
	}
}

// camunda7Refused are the Camunda 7 extension elements that move data or
// run code, with what to write instead. The navigator runs none of them,
// and a diagram that counts on one would take another path with no word
// said; the others (camunda:field, camunda:properties, connectors) only
// configure the implementation a pipeline step replaces, and are ignored.
var camunda7Refused = map[string]string{
	"inputOutput":       "write the mappings as zeebe:ioMapping",
	"in":                "the called process sees every variable, as with Zeebe's default",
	"out":               "the called process sees every variable, as with Zeebe's default",
	"executionListener": "listeners run no code here",
	"taskListener":      "listeners run no code here",
}

// camunda7 reports a refused Camunda 7 extension element e of elem.
func (l *loader) camunda7(e *xelem, elem string) {
	if hint, ok := camunda7Refused[e.local]; ok {
		l.problem(e.line, elem, "camunda:%s is not run (%s)", e.local, hint)
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

// multi reads multi-instance loop characteristics.
func (l *loader) multi(x *xelem, n *node) {
	mi := &multi{sequential: x.attr("isSequential") == "true"}
	given := false // an input collection or cardinality was written
	cardLine := 0
	compile := func(line int, what, src string) *cond {
		if strings.TrimSpace(src) == "" {
			return nil
		}
		if what != "outputElement" {
			given = true
		}
		return l.expr(line, n.elem(), what, src)
	}
	if v := x.nsAttr(nsCamunda, "collection"); v != "" {
		mi.collection = compile(x.line, "collection", v)
		mi.element = x.nsAttr(nsCamunda, "elementVariable")
	}
	for _, k := range x.kids {
		switch {
		case k.isBPMN("loopCardinality"):
			mi.cardinal = compile(k.line, "loopCardinality", k.text)
			cardLine = k.line
		case k.isBPMN("completionCondition"):
			if strings.TrimSpace(k.text) != "" {
				mi.completion = l.expr(k.line, n.elem(), "completionCondition", k.text)
			}
		case k.isBPMN("loopDataInputRef"), k.isBPMN("loopDataOutputRef"), k.isBPMN("inputDataItem"), k.isBPMN("outputDataItem"):
			l.problem(k.line, n.elem(), "<%s> is not supported (use zeebe:loopCharacteristics inputCollection/outputCollection)", k.local)
		case k.isBPMN("complexBehaviorDefinition"):
			l.problem(k.line, n.elem(), "complex multi-instance behavior is not supported")
		case k.isBPMN("extensionElements"):
			for _, z := range k.kids {
				if z.space == nsZeebe && z.local == "loopCharacteristics" {
					if mi.collection != nil && strings.TrimSpace(z.attr("inputCollection")) != "" {
						// The Zeebe one would replace the Camunda 7 one unsaid.
						l.problem(z.line, n.elem(), "multi-instance has camunda:collection and zeebe:loopCharacteristics inputCollection: give one")
					}
					mi.collection = compile(z.line, "inputCollection", z.attr("inputCollection"))
					mi.element = z.attr("inputElement")
					mi.outColl = z.attr("outputCollection")
					mi.outElem = compile(z.line, "outputElement", z.attr("outputElement"))
					mi.outLocal = localOutput(mi.outElem)
					// Zeebe refuses these at deploy; run, the element
					// would never be set, the outputs never kept.
					if in := z.attr("inputElement"); in != "" && strings.TrimSpace(z.attr("inputCollection")) == "" {
						l.problem(z.line, n.elem(), "zeebe:loopCharacteristics inputElement %q without an inputCollection: nothing sets it (name the collection)", in)
					}
					if out := z.attr("outputElement"); strings.TrimSpace(out) != "" && mi.outColl == "" {
						l.problem(z.line, n.elem(), "zeebe:loopCharacteristics outputElement %q without an outputCollection: its values go nowhere (name the collection)", out)
					}
				}
			}
		}
	}
	if !given {
		l.problem(x.line, n.elem(), "multi-instance needs an input collection or a loopCardinality")
	}
	if mi.collection != nil && mi.cardinal != nil {
		// startMI would count the collection and drop the cardinality.
		l.problem(cardLine, n.elem(), "multi-instance has a loopCardinality and an input collection: give one (the collection's length is the count)")
	}
	if mi.outColl != "" {
		n.io.Outputs = appendName(n.io.Outputs, mi.outColl)
	}
	n.mi = mi
}
