package run_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/tool"
	"github.com/sextant-dev/sextant/sdk"
)

// agentModel is a builtin provider that plays an agent: on its n-th turn
// of a conversation (n = the assistant messages so far) it asks for the
// n-th batch of tool calls; after the last batch it answers with the tool
// results it was shown.
type agentModel struct {
	name  string
	turns [][]sdk.ToolCall
	calls atomic.Int32
	mu    sync.Mutex
	seen  []*sdk.ChatRequest
}

func (m *agentModel) Describe() sdk.Info {
	return sdk.Info{Name: m.name, Kind: sdk.KindProvider, Version: "1.0.0", API: sdk.APIVersion}
}

func (m *agentModel) Chat(_ context.Context, r *sdk.ChatRequest) (*sdk.ChatResponse, error) {
	m.calls.Add(1)
	m.mu.Lock()
	m.seen = append(m.seen, r)
	m.mu.Unlock()
	turn := 0
	var results []string
	for _, msg := range r.Messages {
		switch msg.Role {
		case "assistant":
			turn++
		case "tool":
			results = append(results, msg.ToolCallID+"="+msg.Content)
		}
	}
	if turn < len(m.turns) {
		return &sdk.ChatResponse{ToolCalls: m.turns[turn], FinishReason: "tool_calls", Usage: sdk.Usage{InputTokens: 10, OutputTokens: 5}}, nil
	}
	return &sdk.ChatResponse{Text: "done: " + strings.Join(results, "; "), FinishReason: "stop", Usage: sdk.Usage{InputTokens: 10, OutputTokens: 5}}, nil
}

// kit is a builtin tool plugin that counts the calls that reach it.
type kit struct {
	name  string
	mu    sync.Mutex
	calls map[string]int
}

var yes, no = true, false

func (k *kit) Describe() sdk.Info {
	return sdk.Info{Name: k.name, Kind: sdk.KindTool, Version: "1.0.0", API: sdk.APIVersion}
}

func (k *kit) ListTools(context.Context) ([]sdk.ToolSpec, error) {
	return []sdk.ToolSpec{
		{Name: "count", Description: "counts", InputSchema: json.RawMessage(`{"type":"object","properties":{"label":{"type":"string"}},"required":["label"]}`)},
		{Name: "pay", Description: "pays", InputSchema: json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number"}},"required":["amount"]}`),
			Annotations: &sdk.ToolAnnotations{ReadOnly: &no, Destructive: &yes}},
		{Name: "lookup", Description: "looks up", Annotations: &sdk.ToolAnnotations{ReadOnly: &yes}},
	}, nil
}

func (k *kit) CallTool(_ context.Context, r *sdk.ToolCallRequest) (*sdk.ToolResult, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.calls[r.Name]++
	return &sdk.ToolResult{Content: fmt.Sprintf("%s %s", r.Name, r.Arguments)}, nil
}

func (k *kit) count(name string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.calls[name]
}

func call(id, name, args string) sdk.ToolCall {
	return sdk.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
}

// agentFixture is a one-step chain whose llm step offers the kit's tools.
type agentFixture struct {
	model *agentModel
	kit   *kit
	prep  *run.Prepared
	store *store.Store
}

// newAgent writes the pipeline (extra is appended to it, strategy is the
// [constraints] block's body) and opens it over a fresh store.
func newAgent(t *testing.T, turns [][]sdk.ToolCall, extra, constraints string, source ...string) *agentFixture {
	t.Helper()
	n := strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())
	f := &agentFixture{model: &agentModel{name: "agent-" + n, turns: turns}, kit: &kit{name: "kit-" + n, calls: map[string]int{}}}
	dir := t.TempDir()
	files := map[string]string{
		"pipeline.toml": `name = "agent"
[routine]
navigator = "chain"
file = "chain.toml"
[strategy]
file = "strategy.toml"
[providers.default]
use = "` + f.model.name + `"
[tools.kit]
use = "` + f.kit.name + `"
` + strings.Join(source, "") + `
[steps.ask]
kind = "llm"
prompt = "help with {{ .input.topic }}"
tools = ["kit"]
` + extra,
		"chain.toml": `name = "agent"
inputs = ["topic"]
[[steps]]
id = "ask"
inputs = ["topic"]
outputs = ["answer"]
`,
		"strategy.toml": `[metadata]
name = "agent"
version = "1.0.0"
created_at = 2026-01-01T00:00:00Z
[parameters]
user_confirmation = 0.5
[constraints]
` + constraints + `
[evolution]
max_parameter_delta = 0.1
branch_type = "experimental"
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	prep, err := run.Prepare(t.Context(), filepath.Join(dir, "pipeline.toml"), registryWith(t, f.model, f.kit), quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prep.Close(context.Background()) })
	st, err := store.Open(t.Context(), filepath.Join(dir, ".sextant"), store.NewConfig().WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f.prep, f.store = prep, st
	return f
}

func (f *agentFixture) runner() *run.Runner {
	return f.prep.Runner(run.Config{Store: f.store, Logger: quietLogger()})
}

func (f *agentFixture) start(t *testing.T, id string) *run.Result {
	t.Helper()
	res, err := f.runner().Start(t.Context(), run.Input{ID: id, Input: map[string]any{"topic": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// toolSpans returns the task's execute_tool spans in order.
func (f *agentFixture) toolSpans(t *testing.T, id string) []store.Span {
	t.Helper()
	tree, err := f.store.Tree(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []store.Span
	for _, ex := range tree.Executions {
		for _, sp := range ex.Spans {
			if strings.HasPrefix(sp.Name, "execute_tool ") {
				out = append(out, sp)
			}
		}
	}
	return out
}

// TestToolLoop: the model's calls of one turn run, their results go back
// in the model's order, the model answers; every call is a span with the
// GenAI attributes and a recording.
func TestToolLoop(t *testing.T) {
	f := newAgent(t, [][]sdk.ToolCall{
		{call("c1", "count", `{"label": "a"}`), call("c2", "lookup", `{}`), call("c3", "count", `{"label":"a"}`)},
		{call("c4", "count", `{"label": "b"}`)},
	}, "", "")
	res := f.start(t, "t1")
	if res.Status != store.StatusCompleted {
		t.Fatalf("run %s: %s", res.Status, res.Error)
	}
	want := `done: c1=count {"label":"a"}; c2=lookup {}; c3=count {"label":"a"}; c4=count {"label":"b"}`
	if got := res.Output["answer"]; got != want {
		t.Fatalf("answer = %v\nwant %s", got, want)
	}
	if f.model.calls.Load() != 3 || f.kit.count("count") != 3 || f.kit.count("lookup") != 1 {
		t.Fatalf("model calls %d, tool calls %v", f.model.calls.Load(), f.kit.calls)
	}
	// The model was offered the three tools, and saw the results.
	first := f.model.seen[0]
	if len(first.Tools) != 3 || first.Tools[0].Name != "count" || first.Tools[1].Name != "pay" || string(first.Tools[0].InputSchema) == "" {
		t.Fatalf("offered %+v", first.Tools)
	}
	spans := f.toolSpans(t, "t1")
	if len(spans) != 4 {
		t.Fatalf("%d tool spans", len(spans))
	}
	a := spans[2].Attributes
	if spans[2].Name != "execute_tool count" || a["gen_ai.operation.name"].Str() != "execute_tool" || a["gen_ai.tool.name"].Str() != "count" ||
		a["gen_ai.tool.call.id"].Str() != "c3" || a["gen_ai.tool.call.arguments"].Str() != `{"label":"a"}` ||
		a["gen_ai.tool.call.result"].Str() != `count {"label":"a"}` || a["sextant.tool.source"].Str() != "kit" || a["sextant.tool.decision"].Str() != "executed" {
		t.Fatalf("span %s %v", spans[2].Name, a)
	}
	// The same arguments written twice are two calls: the second is the
	// 2nd occurrence, recorded under its own key.
	if spans[0].Attributes["sextant.recording"].Str() == spans[2].Attributes["sextant.recording"].Str() {
		t.Fatal("two calls with the same arguments share a recording")
	}
	rec, err := f.store.Recording(t.Context(), spans[2].Attributes["sextant.recording"].Str())
	if err != nil || rec.Kind != store.RecordTool || !strings.Contains(string(rec.Request), `"arguments":{"label":"a"},"n":2`) {
		t.Fatalf("recording %+v %v", rec, err)
	}
}

// TestToolBadCalls: a tool the step does not offer and arguments that fail
// the schema are told to the model, which goes on; nothing reaches the tool.
func TestToolBadCalls(t *testing.T) {
	f := newAgent(t, [][]sdk.ToolCall{
		{call("c1", "format_disk", `{}`), call("c2", "count", `{"label": 3}`), call("c3", "count", `not json`)},
	}, "", "")
	res := f.start(t, "t1")
	if res.Status != store.StatusCompleted {
		t.Fatalf("run %s: %s", res.Status, res.Error)
	}
	got := res.Output["answer"].(string)
	for _, w := range []string{`c1=error: there is no tool "format_disk" here; the tools are: count, lookup, pay`,
		`c2=error: count: arguments do not match the tool's input schema:`, `c3=error: count: arguments do not match the tool's input schema: want a JSON object, got "not json"`} {
		if !strings.Contains(got, w) {
			t.Errorf("answer lacks %q:\n%s", w, got)
		}
	}
	if n := f.kit.count("count"); n != 0 {
		t.Fatalf("a bad call reached the tool (%d)", n)
	}
	spans := f.toolSpans(t, "t1")
	if len(spans) != 3 || spans[0].Attributes["error.type"].Str() != "tool_not_offered" || spans[1].Attributes["error.type"].Str() != "invalid_arguments" ||
		spans[0].Status.Code != store.CodeError {
		t.Fatalf("spans %+v", spans)
	}
}

// TestToolLimits: a loop past max_turns fails the step (and so the run)
// naming the limit; calls past limits.max_tool_calls fail the run.
func TestToolLimits(t *testing.T) {
	forever := make([][]sdk.ToolCall, 20)
	for i := range forever {
		forever[i] = []sdk.ToolCall{call(fmt.Sprintf("c%d", i), "count", `{"label": "x"}`)}
	}
	f := newAgent(t, forever, "max_turns = 3\n", "")
	res := f.start(t, "t1")
	if res.Status != store.StatusFailed || !strings.Contains(res.Error, "the model still calls tools after max_turns = 3 model calls (last: count)") {
		t.Fatalf("run %s: %s", res.Status, res.Error)
	}
	if f.model.calls.Load() != 3 {
		t.Fatalf("%d model calls", f.model.calls.Load())
	}
	f = newAgent(t, forever, "[limits]\nmax_tool_calls = 2\n", "")
	res = f.start(t, "t1")
	if res.Status != store.StatusFailed || !strings.Contains(res.Error, "limit exceeded: tool calls: 3 > limits.max_tool_calls 2") || f.kit.count("count") != 2 {
		t.Fatalf("run %s: %s (%d calls)", res.Status, res.Error, f.kit.count("count"))
	}
}

// TestToolPolicy: never_execute answers "blocked by policy" and counts a
// violation; prefer_confirm_for and a destructive tool pause the run for a
// person before the call, and the answer decides.
func TestToolPolicy(t *testing.T) {
	turns := [][]sdk.ToolCall{{call("c1", "count", `{"label": "secret"}`), call("c2", "lookup", `{}`)}}
	f := newAgent(t, turns, "", `never_execute = ["tool:kit.count(label=sec*)"]`)
	res := f.start(t, "t1")
	if res.Status != store.StatusCompleted || res.Violations != 1 || f.kit.count("count") != 0 || f.kit.count("lookup") != 1 {
		t.Fatalf("run %s %s, violations %d, calls %v", res.Status, res.Error, res.Violations, f.kit.calls)
	}
	if !strings.Contains(res.Output["answer"].(string), `c1=error: blocked by policy: kit.count({"label":"secret"}) matches "tool:kit.count(label=sec*)" in constraints.never_execute`) {
		t.Fatalf("answer %v", res.Output["answer"])
	}

	for _, c := range []struct {
		name, answer string
		want         int
		told         string
	}{
		{"approved", "yes", 1, `c1=count {"label":"b"}`},
		{"declined", "no", 0, "c1=error: a person declined this call; it was not run"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newAgent(t, [][]sdk.ToolCall{{call("c1", "count", `{"label": "b"}`)}}, "", `prefer_confirm_for = ["tool:kit.count"]`)
			res := f.start(t, "t1")
			if res.Status != store.StatusWaiting || len(res.Waiting) != 1 ||
				res.Waiting[0].Question != `run tool call kit.count({"label":"b"})? (kit.count({"label":"b"}) matches "tool:kit.count" in constraints.prefer_confirm_for) — resume with --set approve=yes|no` {
				t.Fatalf("run %s %+v", res.Status, res.Waiting)
			}
			if f.kit.count("count") != 0 {
				t.Fatal("the call ran before a person answered")
			}
			res, err := f.runner().Resume(t.Context(), "t1", map[string]any{"approve": c.answer})
			if err != nil || res.Status != store.StatusCompleted {
				t.Fatalf("resume: %+v %v", res, err)
			}
			if f.kit.count("count") != c.want || !strings.Contains(res.Output["answer"].(string), c.told) || res.Confirmations != 1 {
				t.Fatalf("calls %d, confirmations %d, answer %v", f.kit.count("count"), res.Confirmations, res.Output["answer"])
			}
		})
	}

	// A destructive tool asks too, unless the source says confirm = false.
	f = newAgent(t, [][]sdk.ToolCall{{call("c1", "pay", `{"amount": 5}`)}}, "", "")
	if res := f.start(t, "t1"); res.Status != store.StatusWaiting || !strings.Contains(res.Waiting[0].Question, "tools.kit: pay is to be confirmed (destructive)") {
		t.Fatalf("destructive: %+v", res)
	}
}

// TestToolCrashMarker: a call whose started marker is recorded but whose
// result is not (the process died during it) is not run again unasked: a
// non-idempotent tool waits for a person; an idempotent one runs again.
func TestToolCrashMarker(t *testing.T) {
	for _, c := range []struct {
		name, tool, args, source string
		wantWait                 bool
	}{
		{"not idempotent", "count", `{"label":"p"}`, "", true},
		{"read-only is idempotent", "lookup", `{}`, "", false},
		{"idempotent by the source", "count", `{"label":"p"}`, "idempotent = true\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newAgent(t, [][]sdk.ToolCall{{call("c1", c.tool, c.args)}}, "", "", c.source)
			canon, err := tool.Canonical(json.RawMessage(c.args))
			if err != nil {
				t.Fatal(err)
			}
			key := store.ToolKey("t1", "kit", c.tool, canon, 1)
			m, err := store.NewToolStarted(key, "t1", store.ToolRequest{Source: "kit", Tool: c.tool, Arguments: canon, N: 1})
			if err != nil {
				t.Fatal(err)
			}
			if err := f.store.PutRecording(t.Context(), m); err != nil {
				t.Fatal(err)
			}
			res := f.start(t, "t1")
			if !c.wantWait {
				if res.Status != store.StatusCompleted || f.kit.count(c.tool) != 1 {
					t.Fatalf("run %s %s, calls %v", res.Status, res.Error, f.kit.calls)
				}
				return
			}
			if res.Status != store.StatusWaiting || f.kit.count(c.tool) != 0 ||
				!strings.Contains(res.Waiting[0].Question, `tool call kit.count({"label":"p"}) started before the run stopped and has no result; it is not idempotent`) {
				t.Fatalf("run %s %+v, calls %v", res.Status, res.Waiting, f.kit.calls)
			}
			res, err = f.runner().Resume(t.Context(), "t1", map[string]any{"approve": "no"})
			if err != nil || res.Status != store.StatusCompleted || f.kit.count(c.tool) != 0 ||
				!strings.Contains(res.Output["answer"].(string), "may or may not have taken effect; a person chose not to run it again") {
				t.Fatalf("resume: %+v %v, calls %v", res, err, f.kit.calls)
			}
		})
	}
}
