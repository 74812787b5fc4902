package routine

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	_ "github.com/sextant-dev/sextant/host/internal/builtins" // the navigators Load opens
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/sdk"
)

const orderBPMN = `<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d" targetNamespace="t">
  <bpmn:process id="order" isExecutable="true">
    <bpmn:startEvent id="start"><bpmn:outgoing>f1</bpmn:outgoing></bpmn:startEvent>
    <bpmn:exclusiveGateway id="gw"><bpmn:incoming>f1</bpmn:incoming></bpmn:exclusiveGateway>
    <bpmn:task id="high"/>
    <bpmn:task id="low"/>
    <bpmn:endEvent id="end"/>
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="gw"/>
    <bpmn:sequenceFlow id="f2" sourceRef="gw" targetRef="high">
      <bpmn:conditionExpression>=amout &gt; 100</bpmn:conditionExpression>
    </bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="f3" sourceRef="gw" targetRef="low">
      <bpmn:conditionExpression>=amount &lt;= 100</bpmn:conditionExpression>
    </bpmn:sequenceFlow>
    <bpmn:sequenceFlow id="f4" sourceRef="high" targetRef="end"/>
    <bpmn:sequenceFlow id="f5" sourceRef="low" targetRef="end"/>
  </bpmn:process>
</bpmn:definitions>
`

func TestNavigator(t *testing.T) {
	tests := []struct {
		path, data, want string
	}{
		{"a.bpmn", "", "bpmn"},
		{"A.XML", "", "bpmn"},
		{"r.toml", "name = 'x'\n  [tasks.a]\n", "dag"},
		{"r.toml", "[[steps]]\nid = 'a'\n", "chain"},
		{"r.toml", "name = 'x'\n", ""},
		{"r.json", "[[steps]]", ""},
	}
	for _, tt := range tests {
		got, err := Navigator(tt.path, []byte(tt.data))
		if tt.want == "" {
			var ne *NavigatorError
			if !errors.As(err, &ne) || err.Error() != tt.path+": cannot tell which navigator reads this file; pass --navigator" {
				t.Errorf("Navigator(%q, %q): got %q, %v; want a *NavigatorError", tt.path, tt.data, got, err)
			}
			continue
		}
		if got != tt.want || err != nil {
			t.Errorf("Navigator(%q, %q) = %q, %v; want %q", tt.path, tt.data, got, err, tt.want)
		}
	}
}

func registry(t *testing.T) *plugin.Registry {
	t.Helper()
	entries, err := plugin.Discover(plugin.SearchPath(nil, t.TempDir()), sdk.Registered())
	if err != nil {
		t.Fatal(err)
	}
	return plugin.NewRegistry(entries)
}

func write(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLoad loads routines with the real builtin navigators, and checks
// each way a load is refused.
func TestLoad(t *testing.T) {
	ctx := context.Background()
	reg := registry(t)
	dir := t.TempDir()
	order := write(t, dir, "order.bpmn", orderBPMN)
	l, err := Load(ctx, reg, order, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Routine.Nodes) != 5 || l.Navigator == nil {
		t.Errorf("loaded %d nodes, navigator %v; want 5 and a navigator", len(l.Routine.Nodes), l.Navigator)
	}
	l.Close(ctx)

	missing := filepath.Join(dir, "missing.bpmn")
	tests := []struct {
		name, path, navigator string
		decisions             []string
		check                 func(error) bool
		want                  string
	}{
		{"no routine", missing, "", nil, isInvalid, missing + ": no such file or directory"},
		{"no decisions", order, "", []string{missing}, isInvalid, "--decisions: " + missing + ": no such file or directory"},
		{"unknown type", write(t, dir, "x.txt", "hi"), "", nil, isNavigatorError, filepath.Join(dir, "x.txt") + ": cannot tell which navigator reads this file; pass --navigator"},
		{"not a navigator", order, "script", nil, isNavigatorError, `--navigator: plugin "script" is a provider, not a navigator`},
		{"unknown navigator", order, "bpnm", nil, isInvalid, `unknown plugin "bpnm" (did you mean "bpmn"?)`},
		{"bad routine", write(t, dir, "bad.bpmn", "<nope"), "", nil, isInvalid, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := Load(ctx, reg, tt.path, tt.navigator, tt.decisions)
			if err == nil {
				l.Close(ctx)
				t.Fatal("loaded")
			}
			if !tt.check(err) || tt.want != "" && err.Error() != tt.want {
				t.Errorf("got %T %q, want %q", err, err, tt.want)
			}
		})
	}
}

func isInvalid(err error) bool { return errors.Is(err, sdk.ErrInvalid) }

func isNavigatorError(err error) bool {
	var ne *NavigatorError
	return errors.As(err, &ne)
}

func TestCheck(t *testing.T) {
	ctx := context.Background()
	path := write(t, t.TempDir(), "order.bpmn", orderBPMN)
	l, err := Load(ctx, registry(t), path, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)

	expr := pipeline.Step{Kind: pipeline.KindExpr}
	p := &pipeline.Pipeline{Steps: map[string]pipeline.Step{"high": expr, "low": expr}}
	res := Check(path, l.Routine, p, map[string]any{"amount": 1}, nil)
	if !res.OK || res.Nodes != 5 || res.Unchecked != "" || len(res.Warnings) != 1 {
		t.Fatalf("got %+v, want ok, 5 nodes, one warning", res)
	}
	want := path + `:11: sequenceFlow "f2": condition "=amout > 100" reads amout, which neither the input nor a step, script, decision or mapping writes (did you mean "amount"?)`
	if got := res.Warnings[0].String(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if res := Check(path, l.Routine, p, nil, nil); len(res.Warnings) != 0 {
		t.Errorf("without a sample input: got warnings %v", res.Warnings)
	}

	bad := Check("b.bpmn", nil, nil, nil, sdk.Invalid(sdk.Problem{File: "b.bpmn", Line: 3, Message: "one"}, sdk.Problem{File: "b.bpmn", Message: "two"}))
	if bad.OK || len(bad.Problems) != 2 || bad.Problems[1].Message != "two" {
		t.Errorf("problems: got %+v", bad)
	}
	plain := Check("c.bpmn", nil, nil, nil, errors.New("c.bpmn: gone"))
	if want := []sdk.Problem{{File: "c.bpmn", Message: "c.bpmn: gone"}}; !reflect.DeepEqual(plain.Problems, want) {
		t.Errorf("plain error: got %+v, want %+v", plain.Problems, want)
	}
}

func TestWarningsUnknownFunction(t *testing.T) {
	r := &sdk.Routine{Expressions: []sdk.Expression{{Text: "substrng(x, 1)", Line: 4, Element: "f", What: "condition", Unknown: []string{"substrng"}}}}
	warns, _ := Warnings(r, "r.bpmn", nil, nil)
	if len(warns) != 1 || warns[0].String() != `r.bpmn:4: f: condition "substrng(x, 1)" calls substrng(), which is not a function (did you mean "substring"?)` {
		t.Errorf("got %v", warns)
	}
}

// TestWrites checks what each step kind lets a routine read, and the
// kinds after which any name may be set.
func TestWrites(t *testing.T) {
	r := &sdk.Routine{Nodes: []sdk.Node{{ID: "s", Step: true}, {ID: "m", Outputs: []string{"total"}}}}
	tests := []struct {
		name string
		p    *pipeline.Pipeline
		want []string
		open string
	}{
		{"no pipeline", nil, nil, `what step "s" sets is not known without --pipeline`},
		{"expr", steps(pipeline.Step{Kind: pipeline.KindExpr, Set: map[string]string{"a": "1"}}), []string{"a", "in", "s", "total"}, ""},
		{"action", steps(pipeline.Step{Kind: pipeline.KindAction}), []string{"action", "confidence", "decision", "in", "reason", "s", "total"}, ""},
		{"llm text", steps(pipeline.Step{Kind: pipeline.KindLLM, Output: "text"}), []string{"in", "s", "total"}, ""},
		{"llm json", steps(pipeline.Step{Kind: pipeline.KindLLM, Output: "json"}), nil, `step "s" (llm, output json) may set any variable`},
		{"human", steps(pipeline.Step{Kind: pipeline.KindHuman}), nil, `step "s" (human) sets whatever the person answers`},
		{"missing step", &pipeline.Pipeline{}, []string{"in", "s", "total"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			writes, open := Writes(r, tt.p, map[string]any{"in": 1})
			if open != tt.open {
				t.Errorf("open: got %q, want %q", open, tt.open)
			}
			if tt.want != nil && !reflect.DeepEqual(keys(writes), tt.want) {
				t.Errorf("writes: got %v, want %v", keys(writes), tt.want)
			}
		})
	}
}

func steps(st pipeline.Step) *pipeline.Pipeline {
	return &pipeline.Pipeline{Steps: map[string]pipeline.Step{"s": st}}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestParseSets(t *testing.T) {
	got, err := ParseSets([]string{"n=3", "f=1.5", "s=hello", "q=\"x\"", "o={\"a\":[1,2.5]}", "two=1 2", "e=", "n2=10000000000000000000000"}, Native)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"n": int64(3), "f": 1.5, "s": "hello", "q": "x", "o": map[string]any{"a": []any{int64(1), 2.5}},
		"two": "1 2", "e": "", "n2": 1e22}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("native: got %#v\nwant %#v", got, want)
	}
	exact, err := ParseSets([]string{"n=0.1", "o={\"a\":2}"}, Exact)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"n": json.Number("0.1"), "o": map[string]any{"a": json.Number("2")}}; !reflect.DeepEqual(exact, want) {
		t.Errorf("exact: got %#v, want %#v", exact, want)
	}
	for _, bad := range []string{"novalue", "=1"} {
		if _, err := ParseSets([]string{"a=1", bad}, Native); err == nil || err.Error() != `"`+bad+`": want NAME=VALUE` {
			t.Errorf("%q: got %v", bad, err)
		}
	}
}

func TestParseChoices(t *testing.T) {
	got, err := ParseChoices([]string{"gw=a,b", "gw=c", "g2=x"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string][]string{"gw": {"a", "b", "c"}, "g2": {"x"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for _, bad := range []string{"gw", "=a", "gw="} {
		if _, err := ParseChoices([]string{bad}); err == nil || err.Error() != `"`+bad+`": want GATEWAY=FLOW[,FLOW]` {
			t.Errorf("%q: got %v", bad, err)
		}
	}
}

func TestExprLanguage(t *testing.T) {
	for _, tt := range []struct {
		lang, src, set, want string
	}{
		{"feel", "n + 0.2", "n=0.1", "0.3"}, // exact decimals
		{"expr", "n * 2", "n=3", "6"},       // int64, not json.Number
		{"expr", "n + 0.5", "n=1", "1.5"},
	} {
		eval, numbers, err := ExprLanguage(tt.lang)
		if err != nil {
			t.Fatal(err)
		}
		vars, err := ParseSets([]string{tt.set}, numbers)
		if err != nil {
			t.Fatal(err)
		}
		v, err := eval(tt.src, vars)
		if err != nil || v.Text() != tt.want {
			t.Errorf("%s %q with %s: got %v, %v; want %s", tt.lang, tt.src, tt.set, v.Text(), err, tt.want)
		}
	}
	if _, _, err := ExprLanguage("js"); err == nil {
		t.Error("an unknown language evaluates")
	}
	eval, _, _ := ExprLanguage("feel")
	if _, err := eval("1 +", nil); !errors.Is(err, sdk.ErrInvalid) {
		t.Errorf("a syntax error: got %v, want sdk.ErrInvalid", err)
	}
}
