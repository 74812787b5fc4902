package bpmn

import (
	"reflect"
	"strings"
)

// Variable scopes, as Zeebe keeps them. The process scope is the host's
// Env.Vars (written through Decision.Set), seen together with the start
// input (the variables an instance starts with are process variables).
// Local scopes live on tokens, as token attributes:
//
//   - an activity's zeebe:input mappings create local variables of the
//     activity (a task, a sub-process);
//   - an instance of a multi-instance activity holds loopCounter, its input
//     element and, when the output element is a variable or a path
//     (=result, =result.total), that variable.
//
// Expressions see the locals of their token and of its enclosing scopes,
// innermost first, then the process variables, then the start input
// (scope.Lookup). Variables a step's result or a message writes are
// propagated as Zeebe propagates them: from the activity's flow scope (an
// instance of a multi-instance activity: from the instance itself) outward,
// into the nearest scope holding a local variable of that name, else into
// the process scope.

// holds reports whether token t holds a local variable name.
func (r *run) holds(t *tok, name string) bool {
	n := r.node(t)
	switch t.kind {
	case tkBody:
		return false
	case tkInstance:
		if mi := n.mi; name == attrLoopCounter || name == mi.element && name != "" || name == mi.outLocal && name != "" {
			return true
		}
	}
	return n.locals[name]
}

// owner is the nearest token, from t outward, that holds a local variable
// name; nil: the name is a process variable.
func (r *run) owner(t *tok, name string) *tok {
	for s := t; s != nil; s = s.scope {
		if r.holds(s, name) {
			return s
		}
	}
	return nil
}

// propagationStart is where variables written at activity token t start
// propagating: its flow scope, or t itself for an instance of a
// multi-instance activity (which must reach its input and output element
// variables), as in Zeebe.
func propagationStart(t *tok) *tok {
	if t.kind == tkInstance {
		return t
	}
	return t.scope
}

// propagate writes vars from token t outward (see propagationStart): each
// into the nearest scope holding a local of its name, else into the process
// scope. The process variables are set in one batch.
func (r *run) propagate(t *tok, vars map[string]any) {
	from := propagationStart(t)
	// The process variables go straight into the run's next vars (no
	// batch of them first): one map a step where there were two.
	var merged map[string]any
	for k, v := range vars {
		if o := r.owner(from, k); o != nil {
			o.setAttr(k, v)
			continue
		}
		if merged == nil {
			merged = r.nextVars(len(vars))
		}
		r.set[k] = v
		merged[k] = v
	}
	if merged != nil {
		r.useVars(merged)
	}
}

// assign writes one (possibly dotted) target of a mapping from token t
// outward, as propagate does.
func (r *run) assign(t *tok, path []string, v any, output map[string]any) {
	if o := r.owner(propagationStart(t), path[0]); o != nil {
		if len(path) > 1 {
			m := copyMap(o.attr(path[0]))
			setPath(m, path[1:], v)
			v = m
		}
		o.setAttr(path[0], v)
		return
	}
	r.setVar(path, v, output)
}

// resultVars are the variables a step's result writes: its entries, as a
// Zeebe job's variables. A result that is not an object reaches the
// navigator as {"value": x} (the host's wrapping; with the node's one
// declared output name beside it when it has one): it writes no variable
// by name and is seen as the step's own variable (vars.STEP) only.
func resultVars(n *node, out map[string]any) map[string]any {
	v, wrapped := out["value"]
	switch {
	case len(out) == 0:
		return nil
	case wrapped && len(out) == 1:
		return nil
	case wrapped && len(out) == 2 && len(n.io.Outputs) == 1:
		if w, ok := out[n.io.Outputs[0]]; ok && reflect.DeepEqual(v, w) {
			return nil
		}
	}
	return out
}

// localOutput is the variable a multi-instance output element creates in
// each instance (Zeebe): the root of an expression that is only a
// variable or a path (=result, =result.total); "" for any other
// expression.
func localOutput(c *cond) string {
	if c == nil {
		return ""
	}
	body, _ := feelText(c.src)
	body = strings.TrimSpace(body)
	root, _, _ := strings.Cut(body, ".")
	for _, part := range strings.Split(body, ".") {
		if !isIdent(part) {
			return ""
		}
	}
	return root
}

// isIdent reports whether s is a plain FEEL name (letters, digits, _).
func isIdent(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, c := range s {
		if c != '_' && !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9') {
			return false
		}
	}
	return !feelKeywords[s]
}

// feelKeywords are FEEL words that are not names.
var feelKeywords = set("true", "false", "null", "and", "or", "not", "in", "between", "instance", "of",
	"if", "then", "else", "for", "return", "some", "every", "satisfies", "function", "external")
