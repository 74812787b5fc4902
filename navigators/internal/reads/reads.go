// Package reads works out which run variables a routine's expr-lang
// expressions read, for sdk.Routine.Reads: a binding client then sends the
// navigator only those.
//
// The answer must never leave out a variable an expression can read, or a
// navigator run over the wire would decide on less than a builtin one. So
// only a plain access by a constant name counts as reading one variable
// (vars.NAME, vars?.NAME, vars["NAME"]); any other use of vars, and any
// use of $env, reads them all.
package reads

import (
	"slices"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"

	"github.com/sextant-dev/sextant/sdk"
)

// Set collects what a routine reads. Its zero value reads nothing.
type Set struct {
	names map[string]bool
	all   bool
}

// Name records variable name as read, e.g. an input a start checks for.
func (s *Set) Name(name string) {
	if s.names == nil {
		s.names = map[string]bool{}
	}
	s.names[name] = true
}

// All records that every variable may be read.
func (s *Set) All() { s.all = true }

// Expr records the variables expression src reads. An expression that
// does not parse reads them all (its routine is refused anyway).
func (s *Set) Expr(src string) {
	if s.all {
		return
	}
	tree, err := parser.Parse(src)
	if err != nil {
		s.all = true
		return
	}
	v := &visitor{s: s, member: map[*ast.IdentifierNode]bool{}}
	func() {
		defer func() {
			if recover() != nil { // a node ast.Walk does not know
				s.all = true
			}
		}()
		ast.Walk(&tree.Node, v)
	}()
	for _, id := range v.idents {
		if !v.member[id] {
			s.all = true // vars as a whole, or $env
		}
	}
}

// Reads returns what the set holds as sdk.Routine.Reads: nil when every
// variable may be read, else the names, sorted.
func (s *Set) Reads() *sdk.Reads {
	if s.all {
		return nil
	}
	out := &sdk.Reads{Vars: make([]string, 0, len(s.names))}
	for n := range s.names {
		out.Vars = append(out.Vars, n)
	}
	slices.Sort(out.Vars)
	return out
}

// visitor collects, in one walk, the vars and $env identifiers and the
// vars identifiers that a member access by a constant name reads from:
// Expr then finds out whether any identifier was used otherwise.
type visitor struct {
	s      *Set
	member map[*ast.IdentifierNode]bool
	idents []*ast.IdentifierNode
}

func (v *visitor) Visit(n *ast.Node) {
	switch n := (*n).(type) {
	case *ast.IdentifierNode:
		if n.Value == "vars" || n.Value == "$env" {
			v.idents = append(v.idents, n)
		}
	case *ast.MemberNode:
		id, ok := n.Node.(*ast.IdentifierNode)
		if !ok || id.Value != "vars" {
			return
		}
		if p, ok := n.Property.(*ast.StringNode); ok {
			v.member[id] = true
			v.s.Name(p.Value)
		}
	}
}
