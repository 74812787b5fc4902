package feel

import "sort"

// Names returns the variables the expression reads from its scope, sorted:
// names that are not built-in functions and are not bound inside the
// expression (by for, some, every, function parameters, context entries,
// or item and ? in filters and tests). A name bound anywhere in the
// expression is left out everywhere, so the list may miss a variable that
// shares a name with a local one; it never lists a local.
//
// Names lets a loader check, before anything runs, that a condition reads
// only variables that can exist.
func (x *Expr) Names() []string {
	bound := map[string]bool{"item": true, "?": true, "partial": true}
	walk(x.root, func(n node) {
		switch v := n.(type) {
		case *forNode:
			for _, it := range v.iters {
				bound[it.name] = true
			}
		case *quantNode:
			for _, it := range v.iters {
				bound[it.name] = true
			}
		case *funcNode:
			for _, p := range v.params {
				bound[p] = true
			}
		case *contextNode:
			for _, k := range v.keys {
				bound[k] = true
			}
		}
	})
	// Keys of contexts in a filtered list are in scope inside the filter.
	inFilter := map[node]bool{}
	walk(x.root, func(n node) {
		if f, ok := n.(*filterNode); ok {
			walk(f.f, func(m node) { inFilter[m] = true })
		}
	})
	seen := map[string]bool{}
	var out []string
	walk(x.root, func(n node) {
		r, ok := n.(*refNode)
		if !ok || bound[r.name] || inFilter[n] || seen[r.name] {
			return
		}
		if builtins[r.name] != nil {
			return
		}
		seen[r.name] = true
		out = append(out, r.name)
	})
	sort.Strings(out)
	return out
}

// Refs returns every name the expression may look up in its scope,
// sorted: Names without leaving anything out. Names bound inside the
// expression and names inside filters are kept (any of them may be the
// scope's); the name of a built-in function called by it (not(x)) is
// left out unless it is also used as a value, since only a function in
// the scope would change such a call and data never holds one. The list
// may hold names the scope is never asked for, never misses a variable it
// is. For a loader that must know everything a routine can read
// (sdk.Routine.Reads).
func (x *Expr) Refs() []string {
	callee := map[node]bool{}
	walk(x.root, func(n node) {
		if c, ok := n.(*callNode); ok && c.bi != nil {
			callee[c.fn] = true
		}
	})
	seen := map[string]bool{}
	var out []string
	walk(x.root, func(n node) {
		if r, ok := n.(*refNode); ok && !seen[r.name] && !callee[n] {
			seen[r.name] = true
			out = append(out, r.name)
		}
	})
	sort.Strings(out)
	return out
}

// Calls returns the names of the functions the expression calls by name
// that are neither built-in nor bound inside it (by a context entry, a
// parameter, for or some): functions the scope must supply, which data
// never does. A loader warns about them (a misspelt built-in, a Camunda
// extension such as is defined that the interpreter lacks).
func (x *Expr) Calls() []string {
	bound := map[string]bool{}
	walk(x.root, func(n node) {
		switch v := n.(type) {
		case *forNode:
			for _, it := range v.iters {
				bound[it.name] = true
			}
		case *quantNode:
			for _, it := range v.iters {
				bound[it.name] = true
			}
		case *funcNode:
			for _, p := range v.params {
				bound[p] = true
			}
		case *contextNode:
			for _, k := range v.keys {
				bound[k] = true
			}
		}
	})
	seen := map[string]bool{}
	var out []string
	walk(x.root, func(n node) {
		c, ok := n.(*callNode)
		if !ok || c.bi != nil {
			return
		}
		r, ok := c.fn.(*refNode)
		if !ok || bound[r.name] || seen[r.name] || builtins[r.name] != nil {
			return
		}
		seen[r.name] = true
		out = append(out, r.name)
	})
	sort.Strings(out)
	return out
}

// Builtins returns the names of FEEL's built-in functions, sorted: what a
// check suggests for a function Calls reports.
func Builtins() []string {
	out := make([]string, 0, len(builtins))
	for name := range builtins {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}
