package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/schema"
	"github.com/sextant-dev/sextant/sdk"
)

// staticResolver answers from a fixed table of installed plugins.
type staticResolver struct{}

var installed = map[string]sdk.Kind{"bpmn": sdk.KindNavigator, "chain": sdk.KindNavigator, "script": sdk.KindProvider,
	"openai": sdk.KindProvider, "pii-gate": sdk.KindGate, "records": sdk.KindTool}

func (staticResolver) Plugin(name string) (sdk.Kind, []sdk.ConfigField, bool) {
	k, ok := installed[name]
	switch name {
	case "pii-gate":
		return k, []sdk.ConfigField{{Name: "patterns", Type: "list"}, {Name: "weights", Type: "table"}}, true
	case "records":
		return k, []sdk.ConfigField{{Name: "key", Type: "string"}, {Name: "kinds", Type: "list"}}, true
	}
	return k, nil, ok
}

func (staticResolver) Names(k sdk.Kind) []string {
	var out []string
	for n, kk := range installed {
		if k == "" || kk == k {
			out = append(out, n)
		}
	}
	return out
}

func (staticResolver) LoadRoutine(_ context.Context, nav, file string, _ []sdk.File) (*sdk.Routine, error) {
	return &sdk.Routine{Nodes: []sdk.Node{
		{ID: "start", Kind: "startEvent"},
		{ID: "classify", Kind: "serviceTask", Step: true, Line: 7},
		{ID: "act", Kind: "serviceTask", Step: true, Line: 9},
		{ID: "confirm", Kind: "userTask", Step: true, Line: 11},
	}}, nil
}

const good = `name = "email-triage"
[routine]
navigator = "bpmn"
file = "r.bpmn"
[strategy]
file = "s.toml"
[providers.default]
use = "script"
rules = "responses.toml"
model = "${MODEL:-scripted}"
fallback = ["backup"]
[providers.backup]
use = "script"
rules = "responses.toml"
[steps.classify]
kind = "llm"
prompt = "Classify {{ .input.body }} {{ playbook }}"
output = "json"
[steps.act]
kind = "action"
action = "{{ .vars.classify.action }}"
confidence = "vars.classify.confidence"
[steps.confirm]
kind = "human"
question = "Go ahead?"
[limits]
max_steps = 50
timeout = "2m"
[score]
success = "output.action == truth.action"
[[gates]]
use = "no-regression"
metric = "success_rate"
tolerance = 0.0
[[gates]]
use = "pii-gate"
patterns = ["@"]
[plugins.pii-gate]
allow_http = []
timeout = "2s"
`

func setup(t *testing.T, doc string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"r.bpmn", "s.toml", "responses.toml"} {
		os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644)
	}
	p := filepath.Join(dir, "pipeline.toml")
	os.WriteFile(p, []byte(doc), 0o644)
	return p
}

func TestLoadGood(t *testing.T) {
	path := setup(t, good)
	p, err := Load(context.Background(), path, staticResolver{}, Options{Getenv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	if p.Providers["default"].Model != "scripted" || p.Limits.Timeout.Std().String() != "2m0s" || p.Limits.MaxSteps != 50 {
		t.Fatalf("decoded %+v", p)
	}
	if p.Steps["classify"].Output != "json" || p.Replay.OnMiss != "fail" || p.Limits.Parallel != 4 {
		t.Fatalf("defaults not applied: %+v", p)
	}
	if len(p.Gates) != 2 || p.Gates[1].Use != "pii-gate" || p.Gates[1].Line != 35 || p.Gates[0].Config["metric"] != "success_rate" {
		t.Fatalf("gates %+v", p.Gates)
	}
	if p.Path("r.bpmn") != filepath.Join(filepath.Dir(path), "r.bpmn") || !filepath.IsAbs(p.Dir) {
		t.Fatalf("Path = %s", p.Path("r.bpmn"))
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		edit func(string) string
		want []string
	}{
		{"typo in provider reference", func(s string) string {
			return strings.Replace(s, "kind = \"llm\"", "kind = \"llm\"\nprovider = \"defualt\"", 1)
		}, []string{`:17: steps.classify.provider: unknown provider "defualt" (did you mean "default"?)`}},
		{"unknown key and wrong type, all at once", func(s string) string {
			return strings.Replace(strings.Replace(s, "max_steps = 50", "max_steps = \"50\"", 1), "[score]", "[score]\nsucess = \"true\"", 1)
		}, []string{
			`:27: limits.max_steps: want integer, got string "50"`,
			`:30: score.sucess: unknown key (did you mean "success"?)`}},
		{"step the routine lacks and node without step", func(s string) string {
			return strings.Replace(s, "[steps.confirm]", "[steps.confrim]", 1)
		}, []string{
			`:15: steps: routine node "confirm" (r.bpmn:11) has no [steps.confirm]`,
			`:23: steps.confrim: routine r.bpmn has no node "confrim" (did you mean "confirm"?)`}},
		{"missing files and unknown plugins", func(s string) string {
			s = strings.Replace(s, `file = "r.bpmn"`, `file = "missing.bpmn"`, 1)
			s = strings.Replace(s, `navigator = "bpmn"`, `navigator = "bpnm"`, 1)
			return strings.Replace(s, `use = "pii-gate"`, `use = "pii-gat"`, 1)
		}, []string{
			`:3: routine.navigator: unknown navigator "bpnm" (did you mean "bpmn"?)`,
			`:4: routine.file: missing.bpmn: no such file`,
			`:36: gates[1].use: unknown gate "pii-gat" (did you mean "pii-gate"?)`}},
		{"decision file missing or not a file", func(s string) string {
			return strings.Replace(s, `file = "r.bpmn"`, `file = "r.bpmn"`+"\ndecisions = [\"s.toml\", \"rules.dmn\", \".\"]", 1)
		}, []string{
			`:5: routine.decisions: rules.dmn: no such file or directory`,
			`:5: routine.decisions: .: not a regular file (a directory)`}},
		{"step fields for another kind", func(s string) string {
			return strings.Replace(s, `question = "Go ahead?"`, `question = "Go ahead?"`+"\nprompt = \"x\"", 1)
		}, []string{`:26: steps.confirm.prompt: human steps do not take prompt`}},
		{"env var unset", func(s string) string {
			return strings.Replace(s, `"${MODEL:-scripted}"`, `"${MODEL}"`, 1)
		}, []string{`:10: providers.default.model: environment variable MODEL is not set (write ${MODEL:-default} to give a default)`}},
		{"api key in file", func(s string) string {
			return strings.Replace(s, `model = "${MODEL:-scripted}"`, `api_key = "sk-123"`, 1)
		}, []string{`:10: providers.default.api_key: API keys never live in files: name the variable that holds it with api_key_env`}},
		{"bad expressions and templates", func(s string) string {
			s = strings.Replace(s, `success = "output.action == truth.action"`, `success = "output.action =="`, 1)
			return strings.Replace(s, `{{ .input.body }}`, `{{ .input.body `, 1)
		}, []string{
			`:17: steps.classify.prompt: bad template: steps.classify.prompt:1: unexpected "{" in operand`,
			`:30: score.success: bad expression: unexpected token EOF (1:16)  | output.action ==  | ...............^`}},
		{"gate config checked against its declaration", func(s string) string {
			return strings.Replace(s, "tolerance = 0.0", "tolerence = 0.0", 1)
		}, []string{`:34: gates[0].tolerence: unknown key (did you mean "tolerance"?)`}},
		{"fallback cycle", func(s string) string {
			return strings.Replace(s, "[providers.backup]\nuse = \"script\"", "[providers.backup]\nuse = \"script\"\nfallback = [\"default\"]", 1)
		}, []string{`:7: providers: fallback cycle backup → default → backup`}},
		{"negative and zero limits", func(s string) string {
			return strings.Replace(s, "max_steps = 50\ntimeout = \"2m\"", "max_steps = -5\ntimeout = \"0s\"\nmax_tokens = -1\nparallel = -3\nmax_cost_usd = -1.0", 1)
		}, []string{
			`:27: limits.max_steps: want an integer > 0, got -5`,
			`:28: limits.timeout: want a duration > 0, got "0s"`,
			`:29: limits.max_tokens: want an integer > 0, got -1`,
			`:30: limits.parallel: want an integer > 0, got -3`,
			`:31: limits.max_cost_usd: want a number > 0, got -1`}},
		{"sizes and durations must parse", func(s string) string {
			return strings.Replace(s, "timeout = \"2s\"", "timeout = \"soon\"\nmemory = \"lots of RAM\"\npool = 0", 1)
		}, []string{
			`:40: plugins.pii-gate.timeout: "soon" is not a duration (want e.g. 30s, 2m, 1h30m, 7d)`,
			`:41: plugins.pii-gate.memory: "lots of RAM" is not a size (want e.g. 64MiB)`,
			`:42: plugins.pii-gate.pool: want an integer > 0, got 0`}},
		{"negative provider settings and prices", func(s string) string {
			s = strings.Replace(s, "[providers.backup]\n", "[providers.backup]\nretries = -1\ntemperature = -0.5\n", 1)
			return s + "[prices.m]\ninput = -2.5\noutput = 1\n"
		}, []string{
			`:13: providers.backup.retries: want an integer >= 0, got -1`,
			`:14: providers.backup.temperature: want a number >= 0, got -0.5`,
			`:44: prices.m.input: want a number >= 0, got -2.5`}},
		{"nan and inf: positioned once, also where any value goes", func(s string) string {
			s = strings.Replace(s, "[providers.backup]\n", "[providers.backup]\nconfig = { t = [1, { u = nan }] }\n", 1)
			s = strings.Replace(s, `patterns = ["@"]`, `patterns = ["@"]`+"\nweights = { a = -inf }", 1)
			return s + "[prices.m]\ninput = inf\noutput = 1\n"
		}, []string{
			`:13: providers.backup.config.t[1].u: want a finite number, got NaN (JSON, which plugins read, has no NaN or infinity)`,
			`:39: gates[1].weights.a: want a finite number, got -Inf (JSON, which plugins read, has no NaN or infinity)`,
			`:44: prices.m.input: want a finite number, got +Inf`}},
		{"syntax error", func(s string) string { return strings.Replace(s, `name = "email-triage"`, `name = = "x"`, 1) },
			[]string{`:1: expected value but found '=' instead`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := setup(t, tc.edit(good))
			_, err := Load(context.Background(), path, staticResolver{}, Options{Getenv: func(string) (string, bool) { return "", false }})
			if !errors.Is(err, sdk.ErrInvalid) {
				t.Fatalf("err = %v, want invalid", err)
			}
			got := strings.ReplaceAll(err.Error(), path, "")
			if got != strings.Join(tc.want, "\n") {
				t.Fatalf("got:\n%s\nwant:\n%s", got, strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestPluginTableSetting: a plugin setting declared as a table takes any
// table (its keys are the plugin's) and refuses anything else.
func TestPluginTableSetting(t *testing.T) {
	doc := "name = \"m\"\n[routine]\nnavigator = \"bpmn\"\nfile = \"r.bpmn\"\n[providers.default]\nuse = \"script\"\n" +
		"[steps.classify]\nkind = \"llm\"\nprompt = \"x\"\n[steps.act]\nkind = \"expr\"\nset = { a = \"1\" }\n" +
		"[steps.confirm]\nkind = \"human\"\nquestion = \"ok?\"\n[[gates]]\nuse = \"pii-gate\"\n"
	if _, err := Load(context.Background(), setup(t, doc+"weights = { email = 2, phone = { x = 1 } }\n"), staticResolver{}, Options{}); err != nil {
		t.Fatalf("a table setting: %v", err)
	}
	_, err := Load(context.Background(), setup(t, doc+"weights = \"heavy\"\n"), staticResolver{}, Options{})
	want := fmt.Sprintf(`:%d: gates[0].weights: want table, got string "heavy"`, strings.Count(doc, "\n")+1)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want the table setting refused", err)
	}
}

// TestDefaultsFromSpec: every default the declaration gives is what a
// pipeline that leaves the key out gets, and what a pipeline writes wins.
func TestDefaultsFromSpec(t *testing.T) {
	minimal := "name = \"m\"\n[routine]\nnavigator = \"bpmn\"\nfile = \"r.bpmn\"\n[strategy]\nfile = \"s.toml\"\n" +
		"[providers.default]\nuse = \"script\"\n" +
		"[steps.classify]\nkind = \"llm\"\nprompt = \"x\"\n[steps.act]\nkind = \"expr\"\nset = { a = \"1\" }\n" +
		"[steps.confirm]\nkind = \"human\"\nquestion = \"ok?\"\n" +
		"[tools.files]\ncommand = \"node\"\n"
	p, err := Load(context.Background(), setup(t, minimal), staticResolver{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var eff map[string]any
	if err := json.Unmarshal(got, &eff); err != nil {
		t.Fatal(err)
	}
	// Walk the declaration: each default must be in the loaded pipeline.
	checked := 0
	schema.Walk(Spec, "", func(k schema.Key) {
		if k.Field.Default == nil || k.When != "" || strings.Contains(k.Path, "[]") {
			// A gate's options get their defaults where the gate runs; an
			// array's entries (score.assert) are absent from the minimal
			// pipeline (TestAssertScaleDefault checks theirs).
			return
		}
		path := strings.Split(k.Path, ".")
		var v any = eff
		for _, part := range path {
			if part == "NAME" {
				part = map[string]string{"providers": "default", "steps": "classify", "tools": "files"}[path[0]]
			}
			m, _ := v.(map[string]any)
			v = m[part]
		}
		want := k.Field.Default
		switch k.Field.Type {
		case schema.Duration:
			d, _ := schema.ParseDuration(want.(string))
			want = d.String()
		case schema.Int, schema.Number:
			if v == nil { // zero is omitted from the JSON form
				v = 0
			}
			want = fmt.Sprint(want)
			v = fmt.Sprint(v)
		case schema.Bool:
			if v == nil { // false is omitted from the JSON form
				v = false
			}
		}
		if fmt.Sprint(v) != fmt.Sprint(want) {
			t.Errorf("%s = %v, want the declared default %v", k.Path, v, want)
		}
		checked++
	})
	if checked < 10 {
		t.Fatalf("only %d defaults checked", checked)
	}
	if p.Limits.Timeout.Std() != 10*time.Minute || p.Limits.MaxSteps != 200 || p.Providers["default"].Retries != 3 {
		t.Fatalf("limits %+v, retries %d", p.Limits, p.Providers["default"].Retries)
	}

	// What the pipeline writes wins, even a zero where zero is allowed.
	p, err = Load(context.Background(), setup(t, strings.Replace(minimal, "use = \"script\"\n", "use = \"script\"\nretries = 0\n", 1)+
		"[replay]\nseed = 0\n[limits]\ntimeout = \"1h\"\n"), staticResolver{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Providers["default"].Retries != 0 || p.Replay.Seed != 0 || p.Limits.Timeout.Std() != time.Hour || p.Limits.MaxSteps != 200 {
		t.Fatalf("written values lost: retries %d, seed %d, limits %+v", p.Providers["default"].Retries, p.Replay.Seed, p.Limits)
	}
}

// TestSpecDocumented: every key of the declaration has a description, so
// reference docs generated from it are complete.
func TestSpecDocumented(t *testing.T) {
	n := 0
	schema.Walk(Spec, "", func(k schema.Key) {
		n++
		if k.Field.Doc == "" {
			t.Errorf("%s has no Doc", k.Path)
		}
	})
	for gate, fields := range BuiltinGates {
		for _, f := range fields {
			if f.Doc == "" {
				t.Errorf("gate %s: %s has no Doc", gate, f.Name)
			}
		}
	}
	if n < 50 {
		t.Fatalf("walked only %d keys", n)
	}
}

// decisionResolver records the decision files the loader hands over.
type decisionResolver struct {
	staticResolver
	got *[]sdk.File
}

func (d decisionResolver) LoadRoutine(ctx context.Context, nav, file string, decisions []sdk.File) (*sdk.Routine, error) {
	*d.got = decisions
	return d.staticResolver.LoadRoutine(ctx, nav, file, decisions)
}

// TestDecisions: [routine] decisions are read relative to the pipeline,
// in order, and reach the navigator's load with their paths as names.
func TestDecisions(t *testing.T) {
	path := setup(t, strings.Replace(good, `file = "r.bpmn"`, `file = "r.bpmn"`+"\ndecisions = [\"b.dmn\", \"sub/a.dmn\"]", 1))
	dir := filepath.Dir(path)
	os.WriteFile(filepath.Join(dir, "b.dmn"), []byte("<b/>"), 0o644)
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "a.dmn"), []byte("<a/>"), 0o644)
	var got []sdk.File
	p, err := Load(context.Background(), path, decisionResolver{got: &got}, Options{Getenv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != filepath.Join(dir, "b.dmn") || string(got[0].Data) != "<b/>" || got[1].Name != filepath.Join(dir, "sub", "a.dmn") || string(got[1].Data) != "<a/>" {
		t.Fatalf("the navigator got %+v", got)
	}
	again, err := p.Decisions()
	if err != nil || len(again) != 2 || again[1].Name != got[1].Name {
		t.Fatalf("Decisions() = %+v, %v", again, err)
	}
}
