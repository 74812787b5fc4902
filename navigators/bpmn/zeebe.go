package bpmn

import (
	"reflect"
	"strings"

	"github.com/sextant-dev/sextant/sdk"
)

// Zeebe (Camunda 8) extension elements. What the navigator reads:
//
//   - zeebe:ioMapping: input mappings are evaluated when a task's token
//     becomes ready (a sub-process's when it starts) and set on the token
//     as local variables (steps see them as .token.NAME, FEEL expressions
//     inside by name); output mappings are evaluated over the step's
//     output when the task completes (or when an event or other element
//     is left) and their targets propagated as Zeebe does (vars.go): a
//     task with output mappings writes only their targets; one without
//     merges its step's whole result. A source starting with "=" is FEEL;
//     any other source is a static string, as in Zeebe. A dotted target
//     (a.b) sets an entry of a context.
//   - zeebe:taskDefinition: its type is the node's sdk.Node.Type, which
//     pipelines may bind a step to ([steps.TYPE]).
//   - zeebe:taskHeaders: static key/values, on the ready token as
//     .token.headers.KEY.
//   - zeebe:loopCharacteristics, zeebe:calledElement: see multi and
//     callee.
//   - zeebe:script (on a script task): its FEEL expression is evaluated by
//     the navigator when the task is reached, no step runs, and the value
//     is written to resultVariable (through the output mappings when
//     there are some), as Zeebe does.
//   - zeebe:calledDecision (on a business rule task): the navigator
//     evaluates the DMN decision itself, no step runs (see dmn.go).
//   - zeebe:subscription (on a message): its correlationKey is parsed as
//     FEEL.
//   - Tasklist metadata that has no effect on where execution goes
//     (zeebe:formDefinition, zeebe:userTaskForm, zeebe:assignmentDefinition,
//     zeebe:taskSchedule, zeebe:priorityDefinition, zeebe:userTask,
//     zeebe:properties) is accepted.
//
// Any other zeebe: element (zeebe:executionListeners, zeebe:taskListeners, ...) is a problem with the
// element and its line: sextant would otherwise run something other than
// what the diagram says.

// zeebeAccepted are Zeebe elements that only configure Camunda's Tasklist
// or tooling.
var zeebeAccepted = set("formDefinition", "userTaskForm", "assignmentDefinition", "taskSchedule",
	"priorityDefinition", "userTask", "properties", "property")

// reservedAttrs are token attributes the engine keeps; an input mapping
// may not use them as a target.
var reservedAttrs = set(attrFlow, attrChoice, attrMI, attrInterrupted, attrMsgWait, attrTimers, attrLoopCounter,
	attrMIItems, attrMICount, attrMINext, attrMIOut, attrMIDone, attrComp, attrCompFor, attrCompWait, attrHeaders)

// attrHeaders holds a ready token's zeebe:taskHeaders.
const attrHeaders = "headers"

// mapping is one zeebe:input or zeebe:output.
type mapping struct {
	target string
	path   []string // target split at dots
	src    *cond    // nil: static
	static string
}

// value evaluates the mapping's source.
func (mp *mapping) value(s *scope) (any, error) {
	if mp.src == nil {
		return mp.static, nil
	}
	return mp.src.value(s)
}

// zeebeMappings reads a zeebe:ioMapping.
func (l *loader) zeebeMappings(e *xelem, n *node) {
	for _, io := range e.kids {
		if io.space != nsZeebe || (io.local != "input" && io.local != "output") {
			l.problem(io.line, n.elem(), "unsupported element <%s> in zeebe:ioMapping", io.local)
			continue
		}
		target := strings.TrimSpace(io.attr("target"))
		src := strings.TrimSpace(io.attr("source"))
		what := "zeebe:" + io.local
		if target == "" {
			l.problem(io.line, n.elem(), "%s: missing target", what)
			continue
		}
		path := strings.Split(target, ".")
		bad := false
		for _, p := range path {
			bad = bad || p == ""
		}
		if bad {
			l.problem(io.line, n.elem(), "%s target %q: not a variable name or a dotted path", what, target)
			continue
		}
		mp := mapping{target: target, path: path}
		if len(path) > 1 {
			// Setting a dotted target merges into the variable's value:
			// it reads it.
			l.reads.Name(path[0])
		}
		if strings.HasPrefix(src, "=") {
			c, err := l.cond(src)
			if err != nil {
				l.problem(io.line, n.elem(), "%s source %q: %v", what, src, err)
				continue
			}
			mp.src = c
			l.listExpr(sdk.Expression{Element: n.elem(), Line: io.line, What: what + " " + target, Text: src}, c)
		} else {
			mp.static = src
		}
		if io.local == "input" {
			if n.k != kTask && n.k != kSubProcess {
				l.problem(io.line, n.elem(), "zeebe:input mappings are supported on tasks and sub-processes only")
				continue
			}
			if reservedAttrs[path[0]] || path[0] == "" {
				l.problem(io.line, n.elem(), "zeebe:input target %q: the name is reserved for the navigator's token attributes", target)
				continue
			}
			n.inMaps = append(n.inMaps, mp)
			n.io.Inputs = appendName(n.io.Inputs, path[0])
			if n.locals == nil {
				n.locals = map[string]bool{}
			}
			n.locals[path[0]] = true
			continue
		}
		n.outMaps = append(n.outMaps, mp)
		n.io.Outputs = appendName(n.io.Outputs, path[0])
	}
}

// zeebeExtension reads one zeebe: element of a flow node's
// extensionElements.
func (l *loader) zeebeExtension(e *xelem, n *node) {
	switch {
	case e.local == "ioMapping":
		l.zeebeMappings(e, n)
	case e.local == "taskDefinition":
		if n.k != kTask {
			l.problem(e.line, n.elem(), "zeebe:taskDefinition is only supported on tasks (model a job at a message event as a send task)")
			return
		}
		t := strings.TrimSpace(e.attr("type"))
		if strings.HasPrefix(t, "=") {
			l.problem(e.line, n.elem(), "zeebe:taskDefinition type %q: expressions are not supported (bind steps by a fixed type)", t)
			return
		}
		n.taskType = t
	case e.local == "taskHeaders":
		h := map[string]any{}
		for _, k := range e.kids {
			if k.space != nsZeebe || k.local != "header" {
				l.problem(k.line, n.elem(), "unsupported element <%s> in zeebe:taskHeaders", k.local)
				continue
			}
			key := k.attr("key")
			if key == "" {
				l.problem(k.line, n.elem(), "zeebe:header: missing key")
				continue
			}
			h[key] = k.attr("value")
		}
		if n.k != kTask {
			l.problem(e.line, n.elem(), "zeebe:taskHeaders are only allowed on tasks")
			return
		}
		n.headers = h
	case e.local == "script":
		l.zeebeScript(e, n)
	case e.local == "calledDecision":
		l.zeebeDecision(e, n)
	case e.local == "calledElement" && n.k == kCallActivity:
		// read by resolve
	case zeebeAccepted[e.local]:
	default:
		l.problem(e.line, n.elem(), "zeebe:%s is not supported", e.local)
	}
}

// zeebeElsewhere reports zeebe: elements in the extensionElements of
// something that is not a flow node (a process, a flow, a message): only
// a message's zeebe:subscription is read there. Camunda 7's listeners
// there are refused as on flow nodes (camunda7).
func (l *loader) zeebeElsewhere(x *xelem, elem string) {
	for _, k := range x.kids {
		if !k.isBPMN("extensionElements") {
			continue
		}
		for _, z := range k.kids {
			switch {
			case z.space == nsCamunda:
				l.camunda7(z, elem)
			case z.space != nsZeebe:
			case z.local == "subscription" && x.local == "message":
				if key := strings.TrimSpace(z.attr("correlationKey")); key != "" {
					c, err := l.cond(key)
					if err != nil {
						l.problem(z.line, elem, "zeebe:subscription correlationKey %q: %v", key, err)
						break
					}
					l.msgKeys[x.attr("id")] = c
					l.listExpr(sdk.Expression{Element: elem, Line: z.line, What: "correlationKey", Text: key}, c)
				}
			case zeebeAccepted[z.local]:
			default:
				l.problem(z.line, elem, "zeebe:%s is not supported", z.local)
			}
		}
	}
}

// inputs evaluates t's input mappings and headers onto the token, before
// the host runs its step. Later mappings see earlier ones.
func (r *run) inputs(t *tok) bool {
	n := r.node(t)
	if n.headers != nil {
		t.setAttr(attrHeaders, n.headers)
	}
	if len(n.inMaps) == 0 {
		return true
	}
	local := make(map[string]any, len(n.inMaps))
	for i := range n.inMaps {
		mp := &n.inMaps[i]
		v, err := mp.value(r.evalEnv(t, local))
		if err != nil {
			r.failf(n, "", "zeebe:input %s: %v", mp.target, err)
			return false
		}
		setPath(local, mp.path, v)
	}
	for k, v := range local {
		t.setAttr(k, v)
	}
	return true
}

// outputs evaluates n's output mappings over output (a step's output, or
// nil) and the token's local variables, and assigns their targets, from
// the activity's flow scope outward (see propagate). As in Zeebe, a
// step's result is then local to the activity: the mappings alone decide
// what the process sees.
func (r *run) outputs(t *tok, output map[string]any) {
	n := r.node(t)
	if len(n.outMaps) == 0 {
		return
	}
	seen := make(map[string]any, len(output)+len(n.inMaps))
	for _, mp := range n.inMaps {
		seen[mp.path[0]] = t.attr(mp.path[0])
	}
	for k, v := range output {
		seen[k] = v
	}
	for i := range n.outMaps {
		mp := &n.outMaps[i]
		sc := r.evalEnv(t, nil)
		sc.out = seen
		v, err := mp.value(sc)
		if err != nil {
			r.failf(n, "", "zeebe:output %s: %v", mp.target, err)
			return
		}
		r.assign(t, mp.path, v, output)
	}
}

// setVar assigns a process variable (a dotted path sets an entry of a
// context, created when missing) through Decision.Set, and makes it
// visible to the rest of the call.
//
// The host stores a step's output under a node's one declared output name
// before the navigator sees it; a dotted target whose base holds exactly
// the step's output (output) starts from an empty context instead, so the
// raw output does not leak into the mapped one.
func (r *run) setVar(path []string, v any, output map[string]any) {
	if r.set == nil {
		r.set = map[string]any{}
	}
	name := path[0]
	if len(path) > 1 {
		cur, ok := r.set[name]
		if !ok {
			cur = r.env.Vars[name]
			if m, isMap := cur.(map[string]any); isMap && output != nil && reflect.DeepEqual(m, output) {
				cur = nil
			}
		}
		m := copyMap(cur)
		setPath(m, path[1:], v)
		v = m
	}
	r.set[name] = v
	vars := make(map[string]any, len(r.env.Vars)+1)
	for k, x := range r.env.Vars {
		vars[k] = x
	}
	vars[name] = v
	env := *r.env
	env.Vars = vars
	r.envVal = env
	r.env = &r.envVal
}

// setPath sets m[path...] = v, replacing (by copies) the contexts on the
// way so that no shared map is changed.
func setPath(m map[string]any, path []string, v any) {
	if len(path) == 1 {
		m[path[0]] = v
		return
	}
	inner := copyMap(m[path[0]])
	setPath(inner, path[1:], v)
	m[path[0]] = inner
}

func copyMap(v any) map[string]any {
	old, _ := v.(map[string]any)
	m := make(map[string]any, len(old)+1)
	for k, x := range old {
		m[k] = x
	}
	return m
}

// zeebeScript reads a script task's zeebe:script: Zeebe's FEEL script
// task, which the navigator runs itself.
func (l *loader) zeebeScript(e *xelem, n *node) {
	if n.tag != "scriptTask" {
		l.problem(e.line, n.elem(), "zeebe:script is only allowed on script tasks")
		return
	}
	src := strings.TrimSpace(e.attr("expression"))
	res := strings.TrimSpace(e.attr("resultVariable"))
	switch {
	case src == "":
		l.problem(e.line, n.elem(), "zeebe:script: missing expression")
		return
	case res == "":
		l.problem(e.line, n.elem(), "zeebe:script: missing resultVariable (the variable the expression's value is written to)")
		return
	case !isIdent(res):
		l.problem(e.line, n.elem(), "zeebe:script resultVariable %q: not a variable name", res)
		return
	}
	c := l.expr(e.line, n.elem(), "zeebe:script expression", src)
	if c == nil {
		return
	}
	n.script, n.resultVar, n.step = c, res, false
	n.io.Outputs = appendName(n.io.Outputs, res)
}

// runScript runs script task t: its expression's value becomes its result
// variable, and the task completes as if a step had returned it.
func (r *run) runScript(t *tok) {
	n := r.node(t)
	v, err := n.script.value(r.evalEnv(t, nil))
	if err != nil {
		r.failf(n, "", "zeebe:script %q: %v", n.script.src, err)
		return
	}
	r.activityDone(t, map[string]any{n.resultVar: v})
}
