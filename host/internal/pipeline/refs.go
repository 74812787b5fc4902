package pipeline

import (
	"fmt"
	"sort"
	"text/template/parse"

	"github.com/sextant-dev/sextant/host/internal/suggest"
	"github.com/sextant-dev/sextant/sdk"
)

// Reference checks: what expressions and templates name must exist when
// the pipeline loads, not fail a run after the model was paid for.
// Checked are strategy.parameters.NAME (against the strategy's
// parameters) and vars.NAME (against the routine's nodes, their declared
// inputs and outputs, and the expr steps' variables). input.* and truth.*
// are not checked: nothing at load says what a task's input holds.

// refScope is what references are checked against; a nil set is not
// checked.
type refScope struct {
	params []string        // strategy parameter names
	vars   map[string]bool // names vars may hold
}

// newRefScope collects the names vars may hold: every node id (a step's
// output lands under it), every declared input and output name, every
// variable an expr step sets.
func newRefScope(p *Pipeline, r *sdk.Routine, params []string) refScope {
	s := refScope{params: params}
	if r != nil {
		s.vars = map[string]bool{}
		for _, n := range r.Nodes {
			s.vars[n.ID] = true
			for _, name := range n.Inputs {
				s.vars[name] = true
			}
			for _, name := range n.Outputs {
				s.vars[name] = true
			}
		}
		for _, st := range p.Steps {
			for k := range st.Set {
				s.vars[k] = true
			}
		}
	}
	return s
}

// check returns a message for each path that names something that does
// not exist. extra lists names vars may also hold here (the score's
// output.action).
func (s refScope) check(paths [][]string, extra ...string) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range paths {
		var msg string
		switch {
		case len(p) >= 3 && p[0] == "strategy" && p[1] == "parameters" && s.params != nil:
			if !contains(s.params, p[2]) {
				msg = fmt.Sprintf("strategy.parameters.%s: the strategy has no parameter %q%s", p[2], p[2], suggest.Hint(p[2], s.params))
			}
		case len(p) >= 2 && (p[0] == "vars" || (p[0] == "output" && len(extra) > 0)) && s.vars != nil:
			if !s.vars[p[1]] && !contains(extra, p[1]) {
				names := make([]string, 0, len(s.vars)+len(extra))
				for n := range s.vars {
					names = append(names, n)
				}
				names = append(names, extra...)
				sort.Strings(names)
				msg = fmt.Sprintf("%s.%s: no step, node or output of the routine is called %q%s", p[0], p[1], p[1], suggest.Hint(p[1], names))
			}
		}
		if msg != "" && !seen[msg] {
			seen[msg] = true
			out = append(out, msg)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// exprPaths extracts the dotted identifier paths (a.b.c) of an expression,
// outside string literals. It knows no grammar beyond that, so it reads
// expr-lang and FEEL alike: a path that follows a dot, a call or an index
// (x.a.b, f(x).a, m["k"].a) is a member access, not a root, and is left
// out.
func exprPaths(src string) [][]string {
	var out [][]string
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for j < len(src) && src[j] != c {
				if src[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			i = j + 1
		case identStart(c):
			member := i > 0 && (src[i-1] == '.' || src[i-1] == ')' || src[i-1] == ']' || identPart(src[i-1]))
			var path []string
			for {
				j := i
				for j < len(src) && identPart(src[j]) {
					j++
				}
				path = append(path, src[i:j])
				i = j
				if i+1 < len(src) && src[i] == '.' && identStart(src[i+1]) {
					i++
					continue
				}
				break
			}
			if !member && len(path) > 1 {
				out = append(out, path)
			}
		default:
			i++
		}
	}
	return out
}

func identStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func identPart(c byte) bool { return identStart(c) || c >= '0' && c <= '9' }

// templatePaths extracts the field chains a template reads from its top
// data (.vars.classify.action, $.strategy.parameters.x), leaving out the
// bodies of with and range, where dot is something else.
func templatePaths(src string) [][]string {
	tmpl, err := ParseTemplate("t", src)
	if err != nil || tmpl.Tree == nil {
		return nil // reported as a bad template
	}
	var out [][]string
	var walk func(n parse.Node, top bool)
	walkPipe := func(p *parse.PipeNode, top bool) {
		if p == nil {
			return
		}
		for _, c := range p.Cmds {
			for _, a := range c.Args {
				walk(a, top)
			}
		}
	}
	walk = func(n parse.Node, top bool) {
		switch x := n.(type) {
		case *parse.ListNode:
			if x == nil {
				return
			}
			for _, c := range x.Nodes {
				walk(c, top)
			}
		case *parse.ActionNode:
			walkPipe(x.Pipe, top)
		case *parse.PipeNode:
			walkPipe(x, top)
		case *parse.FieldNode:
			if top && len(x.Ident) > 1 {
				out = append(out, x.Ident)
			}
		case *parse.VariableNode:
			if len(x.Ident) > 2 && x.Ident[0] == "$" {
				out = append(out, x.Ident[1:])
			}
		case *parse.IfNode:
			walkPipe(x.Pipe, top)
			walk(x.List, top)
			walk(x.ElseList, top)
		case *parse.WithNode:
			walkPipe(x.Pipe, top)
			walk(x.List, false)
			walk(x.ElseList, top)
		case *parse.RangeNode:
			walkPipe(x.Pipe, top)
			walk(x.List, false)
			walk(x.ElseList, top)
		}
	}
	walk(tmpl.Tree.Root, true)
	return out
}
