package reads

import (
	"reflect"
	"testing"
)

func TestExpr(t *testing.T) {
	for _, c := range []struct {
		src  string
		want []string // nil: all
	}{
		{`true`, []string{}},
		{`input.topic == "x" && strategy.parameters.level > 2`, []string{}},
		{`vars.a == 1`, []string{"a"}},
		{`vars?.a.b != nil || vars["c"] > 2`, []string{"a", "c"}},
		{`vars.a.b.c == vars.d`, []string{"a", "d"}},
		{`len(vars.items) > 0 and all(vars.items, {# > 1})`, []string{"items"}},
		{`let x = vars.a; x + 1 > 2`, []string{"a"}},
		{`vars.f(1)`, []string{"f"}},
		{`input.vars == 1`, []string{}}, // a field named vars, not the variables
		// Anything but a constant name reads them all.
		{`vars[input.key] == 1`, nil},
		{`vars["a" + "b"] == 1`, nil},
		{`len(vars) > 2`, nil},
		{`"a" in vars`, nil},
		{`keys(vars)[0] == "a"`, nil},
		{`let v = vars; v.a == 1`, nil},
		{`vars == nil`, nil},
		{`$env.vars.a == 1`, nil},
		{`$env["vars"]["a"] == 1`, nil},
		{`vars[1:2]`, nil},
		{`vars.a ==`, nil}, // does not parse
	} {
		var s Set
		s.Expr(c.src)
		got := s.Reads()
		switch {
		case c.want == nil && got != nil:
			t.Errorf("%s: reads %q, want every variable", c.src, got.Vars)
		case c.want != nil && got == nil:
			t.Errorf("%s: reads every variable, want %q", c.src, c.want)
		case c.want != nil && !reflect.DeepEqual(got.Vars, c.want):
			t.Errorf("%s: reads %q, want %q", c.src, got.Vars, c.want)
		}
	}
}

func TestSet(t *testing.T) {
	var s Set
	if r := s.Reads(); r == nil || len(r.Vars) != 0 {
		t.Fatalf("zero Set reads %+v, want none", r)
	}
	s.Name("topic")
	s.Expr(`vars.b > 1`)
	s.Expr(`vars.a > 1 or vars.b < 0`)
	if r := s.Reads(); r == nil || !reflect.DeepEqual(r.Vars, []string{"a", "b", "topic"}) {
		t.Fatalf("reads %+v, want a, b and topic, sorted", r)
	}
	s.All()
	s.Expr(`vars.c`)
	if r := s.Reads(); r != nil {
		t.Fatalf("after All: reads %+v, want nil (every variable)", r.Vars)
	}
}
