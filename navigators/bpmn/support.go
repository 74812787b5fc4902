package bpmn

import (
	"slices"
	"strings"
)

// Element is one BPMN element and whether the navigator runs it.
type Element struct {
	// Tag is the element's local name in the BPMN model namespace.
	Tag string
	// Supported is false for elements the loader refuses (with the
	// element's id and line).
	Supported bool
	// Note says what the navigator does with it, or why it is refused.
	Note string
}

// Elements lists the BPMN flow elements and event definitions, supported
// and refused, for the reference docs (docs/reference/routines.md). The
// tasks and refused nodes come from the loader's own tables (taskTags,
// unsupportedNodes); TestElementsAgreeWithLoader loads each element and
// holds the rest to what the loader does.
func Elements() []Element {
	var out []Element
	for tag := range taskTags {
		note := "runs the pipeline's [steps.ID] (or the step bound by its zeebe:taskDefinition type)"
		switch tag {
		case "scriptTask":
			note += "; with zeebe:script, the navigator evaluates its FEEL expression into resultVariable and no step runs"
		case "businessRuleTask":
			note += "; with zeebe:calledDecision, the navigator evaluates the DMN decision (from the pipeline's [routine] decisions) with the variables in scope into resultVariable and no step runs"
		}
		out = append(out, Element{tag, true, note})
	}
	for tag, why := range unsupportedNodes {
		out = append(out, Element{tag, false, why})
	}
	out = append(out,
		Element{"receiveTask", true, "waits for its message (sextant send)"},
		Element{"subProcess", true, "embedded sub-process; triggeredByEvent=\"true\" makes an event sub-process"},
		Element{"transaction", true, "runs as an embedded sub-process (cancel end events and boundary events apply)"},
		Element{"adHocSubProcess", false, "refused unless empty (an empty one completes at once): its order needs run-time decisions"},
		Element{"callActivity", true, "calls another process of the same file"},
		Element{"startEvent", true, "none, message, timer, signal, conditional; error/escalation/compensation in event sub-processes"},
		Element{"endEvent", true, "none, terminate, error, escalation, message, signal, compensation, cancel"},
		Element{"intermediateCatchEvent", true, "message, timer (ISO 8601 or Zeebe's cron cycles), signal, conditional, link"},
		Element{"intermediateThrowEvent", true, "none, message, signal, escalation, compensation, link"},
		Element{"boundaryEvent", true, "interrupting or not: message, timer, signal, error, escalation, conditional, compensation, cancel"},
		Element{"exclusiveGateway", true, "FEEL conditions on outgoing flows; default flow; a condition that gives null or another non-boolean stops the run (an incident)"},
		Element{"parallelGateway", true, "fork and join"},
		Element{"inclusiveGateway", true, "every flow whose condition holds; the join waits for the tokens that can still arrive"},
		Element{"eventBasedGateway", true, "the first of its events to happen wins"},
		Element{"sequenceFlow", true, "conditionExpression in FEEL"},
	)
	slices.SortFunc(out, func(a, b Element) int { return strings.Compare(a.Tag, b.Tag) })
	return out
}
