package schema

import (
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/sextant-dev/sextant/sdk/tomlpos"
)

var testBlock = &Block{Fields: []Field{
	{Name: "name", Type: String, Required: true},
	{Name: "limits", Type: Table, Block: &Block{Fields: []Field{
		{Name: "max_steps", Type: Int},
		{Name: "timeout", Type: Duration},
	}}},
	{Name: "steps", Type: TableMap, Block: &Block{Fields: []Field{
		{Name: "kind", Type: String, Required: true, Enum: []string{"llm", "expr"}},
		{Name: "set", Type: StringMap},
	}}},
	{Name: "gates", Type: TableArray, Block: &Block{Open: true, Fields: []Field{
		{Name: "use", Type: String, Required: true},
	}}},
	{Name: "tags", Type: StringList},
}}

func TestCheck(t *testing.T) {
	doc := `nmae = "x"
tags = ["a", 2]
[limits]
max_steps = "many"
timeout = "forever"
[steps.classify]
kind = "lml"
set = { a = 1 }
[[gates]]
use = "delta-bound"
whatever = 3
[[gates]]
metric = "x"
`
	var data map[string]any
	if _, err := toml.Decode(doc, &data); err != nil {
		t.Fatal(err)
	}
	ix, err := tomlpos.Scan("p.toml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	c := &Checker{File: "p.toml", Index: ix}
	c.Check(data, testBlock, nil)
	var got []string
	for _, p := range c.Problems() {
		got = append(got, p.String())
	}
	want := []string{
		`p.toml:1: nmae: unknown key (did you mean "name"?)`,
		`p.toml:1: name: missing (required)`,
		`p.toml:2: tags[1]: want string, got integer 2`,
		`p.toml:4: limits.max_steps: want integer, got string "many"`,
		`p.toml:5: limits.timeout: "forever" is not a duration (want e.g. 30s, 2m, 1h30m, 7d)`,
		`p.toml:7: steps.classify.kind: "lml" is not one of llm, expr (did you mean "llm"?)`,
		`p.toml:8: steps.classify.set.a: want string, got integer 1`,
		`p.toml:12: gates[1].use: missing (required)`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"2m": 2 * time.Minute, "7d": 7 * 24 * time.Hour, "1d12h": 36 * time.Hour, "1h30m": 90 * time.Minute} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "d", "-1s", "7x", "xd"} {
		if _, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) succeeded", in)
		}
	}
}

func TestDoc(t *testing.T) {
	d := Doc(testBlock, "")
	for _, want := range []string{"name ", "limits.max_steps", "steps.NAME.kind", "string (llm | expr), required", "gates[].use"} {
		if !strings.Contains(d, want) {
			t.Errorf("doc lacks %q:\n%s", want, d)
		}
	}
}
