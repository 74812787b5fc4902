package schema

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

func TestConfigRoundTrip(t *testing.T) {
	cf := []sdk.ConfigField{
		{Name: "url", Type: "string", Required: true, Doc: "where"},
		{Name: "n", Type: "number", Default: 3.0},
		{Name: "on", Type: "bool"},
		{Name: "every", Type: "duration"},
		{Name: "hosts", Type: "list"},
		{Name: "extra", Type: "table"},
		{Name: "later", Type: "vector"}, // a newer plugin's type
	}
	fs := FromConfig(cf)
	want := []Type{String, Number, Bool, Duration, StringList, Table, Any}
	for i, f := range fs {
		if f.Type != want[i] {
			t.Errorf("%s: type %v, want %v", f.Name, f.Type, want[i])
		}
	}
	if fs[5].Block == nil || !fs[5].Block.Open {
		t.Errorf("a table setting must be an open block, got %+v", fs[5].Block)
	}
	// A table setting is checked without a panic and with any keys.
	c := &Checker{File: "p.toml"}
	c.Check(map[string]any{"url": "x", "extra": map[string]any{"anything": 1}}, &Block{Fields: fs}, nil)
	if p := c.Problems(); len(p) != 0 {
		t.Errorf("problems: %v", p)
	}
	back := ToConfig(fs[:6])
	if !reflect.DeepEqual(back, cf[:6]) {
		t.Errorf("round trip:\n got %+v\nwant %+v", back, cf[:6])
	}
	if got := ToConfig([]Field{{Name: "k", Type: Int}})[0].Type; got != "number" {
		t.Errorf("an integer is a number setting, got %q", got)
	}
}

func TestWalkVariants(t *testing.T) {
	b := &Block{Fields: []Field{{Name: "gates", Type: TableArray, Block: &Block{Open: true,
		Fields:   []Field{{Name: "use", Type: String, Required: true}},
		Variants: &Variants{Key: "use", Cases: map[string][]Field{"budget": {{Name: "max_cost_usd", Type: Number}}, "cooldown": nil}}}}}}
	var got []string
	Walk(b, "", func(k Key) { got = append(got, k.Path+"|"+k.When) })
	want := []string{"gates|", "gates[].use|", `gates[].max_cost_usd|use = "budget"`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("walk = %q, want %q", got, want)
	}
	if d := Doc(b, ""); !strings.Contains(d, `(use = "budget")`) {
		t.Errorf("doc lacks the variant:\n%s", d)
	}
}
