package replay_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/testdata/plugins/tool-kit/kit"
)

// countingKit is the tool-kit plugin under its own name, counting the calls
// that reach it.
type countingKit struct {
	kit.Kit
	name  string
	calls atomic.Int32
}

func (k *countingKit) Describe() sdk.Info {
	i := k.Kit.Describe()
	i.Name = k.name
	return i
}

func (k *countingKit) CallTool(ctx context.Context, r *sdk.ToolCallRequest) (*sdk.ToolResult, error) {
	k.calls.Add(1)
	return k.Kit.CallTool(ctx, r)
}

// agentPipeline writes a one-step agent on the script provider: it adds
// two numbers with the kit's add tool, echoes, then answers with the sum.
func agentPipeline(t *testing.T, kitName, source, extra string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"pipeline.toml": `name = "agent"
[routine]
navigator = "chain"
file = "chain.toml"
[strategy]
file = "strategy.toml"
[providers.default]
use = "script"
rules = "responses.toml"
[tools.` + source + `]
use = "` + kitName + `"
` + extra + `
[steps.ask]
kind = "llm"
prompt = "add {{ .input.a }} and {{ .input.b }}"
tools = ["` + source + `.add", "` + source + `.echo"]
[score]
success = 'output.answer == "the sum is " + string(input.a + input.b)'
`,
		"responses.toml": `[[rule]]
step = "ask"
when = 'rounds == 0'
[[rule.tool_calls]]
name = "add"
arguments = '{"a": {{ .input.a }}, "b": {{ .input.b }}}'
[[rule.tool_calls]]
name = "echo"
arguments = '{"note": "adding"}'

[[rule]]
step = "ask"
reply = 'the sum is {{ (index .results 0).content }}'
`,
		"chain.toml": `name = "agent"
inputs = ["a", "b"]
[[steps]]
id = "ask"
inputs = ["a", "b"]
outputs = ["answer"]
`,
		"strategy.toml": `[metadata]
name = "agent"
version = "1.0.0"
created_at = 2026-01-01T00:00:00Z
[parameters]
user_confirmation = 0.5
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
	return filepath.Join(dir, "pipeline.toml")
}

// TestReplayNeverExecutesTools records agent runs whose step calls tools,
// then replays them: every self-replay reproduces its trace from the
// recordings, and no call reaches the tool plugin. A replay of a pipeline
// whose tool was never recorded fails naming the call, without calling
// it, unless on_miss = live and the tool's replay is live.
func TestReplayNeverExecutesTools(t *testing.T) {
	ctx := context.Background()
	k := &countingKit{name: "counting-kit-replay"}
	entries, err := plugin.Discover(nil, append(sdk.Registered(), k))
	if err != nil {
		t.Fatal(err)
	}
	reg := plugin.NewRegistry(entries)
	path := agentPipeline(t, k.name, "kit", "")
	src, err := store.Open(ctx, t.TempDir(), store.NewConfig().WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	prep, err := run.Prepare(ctx, path, reg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	r := prep.Runner(run.Config{Store: src, Logger: quiet})
	for i := range 3 {
		res, err := r.Start(ctx, run.Input{ID: fmt.Sprintf("task-%d", i), Input: map[string]any{"a": i, "b": 40}})
		if err != nil || res.Status != store.StatusCompleted || res.Output["answer"] != fmt.Sprintf("the sum is %d", i+40) {
			t.Fatalf("run %d: %+v %v", i, res, err)
		}
	}
	prep.Close(ctx)
	live := k.calls.Load()
	if live != 6 {
		t.Fatalf("%d tool calls live, want 6", live)
	}
	base, err := strategy.Load(filepath.Join(filepath.Dir(path), "strategy.toml"))
	if err != nil {
		t.Fatal(err)
	}
	prepare := func(ctx context.Context) (*run.Prepared, error) {
		return run.Prepare(ctx, path, reg, quiet, run.WithoutCredentials())
	}
	res := replayAll(t, replay.Config{Prepare: prepare, Source: src, Pipeline: "agent", Strategies: []*strategy.Strategy{base}, Workers: 2, Logger: quiet})
	if len(res) != 3 {
		t.Fatalf("%d results", len(res))
	}
	for _, r := range res {
		if !r.SelfReplay || !r.Reproduced || r.Status != store.StatusCompleted || !r.Outcome.Success || r.Misses != 0 || r.Outcome.Confidence != 1 {
			t.Errorf("%s: %+v", r.Task, r)
		}
	}
	if got := k.calls.Load(); got != live {
		t.Fatalf("the replay executed %d tool calls", got-live)
	}
	for _, r := range res {
		i := strings.TrimPrefix(r.Task, "task-")
		if len(r.ToolCalls) != 2 || r.ToolCalls[0] != (run.ToolCall{Source: "kit", Tool: "add", Arguments: `{"a":` + i + `,"b":40}`, Decision: "recorded", Result: fmt.Sprint(40 + int(i[0]-'0'))}) ||
			r.ToolCalls[1].Tool != "echo" || r.ToolCalls[1].Arguments != `{"note":"adding"}` || r.ToolCalls[1].Error != "" {
			t.Errorf("%s: tool calls %+v", r.Task, r.ToolCalls)
		}
	}

	// A candidate that forbids echo: its replays tell the call blocked, and
	// the model (the script provider, reached under on_miss = live) answers
	// on; the baseline's calls are as recorded.
	cand := base.Clone()
	cand.Metadata.Version = "1.1.0"
	cand.Constraints.NeverExecute = []string{"tool:kit.echo"}
	res = replayAll(t, replay.Config{Prepare: prepare, Source: src, Pipeline: "agent", Strategies: []*strategy.Strategy{base, cand},
		OnMiss: replay.MissLive, Workers: 1, Logger: quiet})
	for _, r := range res {
		if r.Hash != cand.Hash() {
			continue
		}
		if len(r.ToolCalls) != 2 || r.ToolCalls[0].Decision != "recorded" || r.ToolCalls[1].Decision != "blocked" ||
			!strings.HasPrefix(r.ToolCalls[1].Error, `error: blocked by policy: `) || r.ToolCalls[1].Result != "" || r.Outcome.Violations != 1 {
			t.Errorf("%s under the candidate: %+v", r.Task, r)
		}
	}
	if got := k.calls.Load(); got != live {
		t.Fatalf("the replay executed %d tool calls", got-live)
	}

	// The same agent with its tools from a source of another name: its
	// calls and lists were never recorded under that name. fail names what
	// is missing; live lists the source and executes only tools whose
	// replay is live (add states no annotation: recorded, unless the
	// source says replay = "live").
	for _, c := range []struct {
		onMiss, extra string
		calls         int32
		status        store.Status
		err           string
	}{
		{replay.MissFail, "", 0, store.StatusFailed, `tools.kit2: the task has no recorded tool list (a replay starts no tool source; --on-miss live lists it live)`},
		{replay.MissLive, "", 0, store.StatusFailed, `) has no recording: a replay never executes tools (with --on-miss live it executes those whose replay is live)`},
		{replay.MissLive, `replay = "live"`, 6, store.StatusCompleted, ""},
	} {
		if c.onMiss == replay.MissLive && c.extra == "" {
			c.err = `tool call kit2.add({"a":N,"b":40}` + c.err
		}
		p := agentPipeline(t, k.name, "kit2", c.extra)
		before := k.calls.Load()
		res := replayAll(t, replay.Config{Prepare: func(ctx context.Context) (*run.Prepared, error) {
			return run.Prepare(ctx, p, reg, quiet, run.WithoutCredentials())
		}, Source: src, Pipeline: "agent", Strategies: []*strategy.Strategy{base}, OnMiss: c.onMiss, Workers: 1, Logger: quiet})
		for _, r := range res {
			want := strings.Replace(c.err, "N", strings.TrimPrefix(r.Task, "task-"), 1)
			if r.Status != c.status || !strings.Contains(r.Error, want) {
				t.Errorf("on_miss %s %s: %s: %s %q", c.onMiss, c.extra, r.Task, r.Status, r.Error)
			}
		}
		if got := k.calls.Load() - before; got != c.calls {
			t.Errorf("on_miss %s %s: %d tool calls executed, want %d", c.onMiss, c.extra, got, c.calls)
		}
	}
}
