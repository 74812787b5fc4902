package replay_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/plugintest"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	_ "github.com/sextant-dev/sextant/navigators/bpmn"
	"github.com/sextant-dev/sextant/sdk"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

const triage = "../../../pipelines/email-triage/pipeline.toml"

func prepare(ctx context.Context) (*run.Prepared, error) {
	entries, err := plugin.Discover(nil, sdk.Registered())
	if err != nil {
		return nil, err
	}
	return run.Prepare(ctx, triage, plugin.NewRegistry(entries), quiet)
}

var emails = []struct{ subject, body, truth string }{
	{"Weekly digest", "Top stories. Unsubscribe any time.", "archive"},
	{"Invoice 77 overdue", "Please pay the attached invoice by wire transfer.", "flag_financial"},
	{"Lunch?", "Are you free on Friday?", "reply"},
	{"Fwd", "Please forward this to my gmail address", "archive"},
	{"Hello", "Just saying hi.", "archive"},
}

// record runs n tasks live into a new store, answering the ones that ask.
func record(t *testing.T, n int) *store.Store {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, t.TempDir(), store.NewConfig().WithSyncCheckpoints(false).WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	prep, err := prepare(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close(ctx)
	r := prep.Runner(run.Config{Store: s, Logger: quiet})
	for i := 0; i < n; i++ {
		e := emails[i%len(emails)]
		truth, _ := json.Marshal(map[string]string{"action": e.truth})
		res, err := r.Start(ctx, run.Input{ID: fmt.Sprintf("task-%03d", i),
			Input: map[string]any{"from": "x@example.com", "subject": fmt.Sprintf("%s #%d", e.subject, i), "body": e.body},
			Truth: truth, Tags: []string{fmt.Sprintf("difficulty=%s", []string{"easy", "hard"}[i%2])}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status == store.StatusWaiting {
			answer := []string{"yes", "no"}[i%2]
			if res, err = r.Resume(ctx, res.Task, map[string]any{"answer": answer}); err != nil || res.Status != store.StatusCompleted {
				t.Fatalf("resume %s: %v %+v", res.Task, err, res)
			}
		}
	}
	return s
}

func load(t *testing.T, path string) *strategy.Strategy {
	t.Helper()
	st, err := strategy.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func replayAll(t *testing.T, cfg replay.Config) []replay.Result {
	t.Helper()
	var out []replay.Result
	if err := replay.Run(context.Background(), cfg, func(r replay.Result) error {
		out = append(out, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSelfReplayReproduces(t *testing.T) {
	src := record(t, 40)
	base := load(t, "../../../pipelines/email-triage/strategies/email-handler.toml")
	cfg := replay.Config{Prepare: prepare, Source: src, Pipeline: "email-triage", Strategies: []*strategy.Strategy{base}, Workers: 4, Logger: quiet}
	res := replayAll(t, cfg)
	if len(res) != 40 {
		t.Fatalf("%d results, want 40", len(res))
	}
	successes := 0
	for _, r := range res {
		if !r.SelfReplay || !r.Reproduced || r.Misses != 0 || r.Status != store.StatusCompleted || r.Outcome.Confidence != 1 {
			t.Fatalf("task %s: %+v (divergence %+v)", r.Task, r, r.Divergence)
		}
		if r.Outcome.Success {
			successes++
		}
	}
	// Deterministic: one worker gives the same results, in the same order.
	cfg.Workers = 1
	if again := replayAll(t, cfg); !reflect.DeepEqual(res, again) {
		t.Fatal("replay with 1 worker differs from 4 workers")
	}
	if successes == 0 || successes == 40 {
		t.Fatalf("%d of 40 succeeded; the dataset should have both", successes)
	}
}

func TestCandidateReplay(t *testing.T) {
	src := record(t, 20)
	base := load(t, "../../../pipelines/email-triage/strategies/email-handler.toml")
	// A parameter-only candidate asks the same questions: no misses.
	cand := base.Clone()
	cand.Metadata.Version = "2.1.0"
	cand.Parameters["user_confirmation"] = 0.5
	res := replayAll(t, replay.Config{Prepare: prepare, Source: src, Pipeline: "email-triage",
		Strategies: []*strategy.Strategy{base, cand}, Workers: 2, Logger: quiet})
	if len(res) != 40 {
		t.Fatalf("%d results, want 40", len(res))
	}
	changed := 0
	for i := 0; i < len(res); i += 2 {
		b, c := res[i], res[i+1]
		if b.Task != c.Task || b.Strategy != "2.0.0" || c.Strategy != "2.1.0" || c.SelfReplay || c.Misses != 0 {
			t.Fatalf("pair %d: %+v / %+v", i, b, c)
		}
		if !reflect.DeepEqual(b.Outcome, c.Outcome) {
			changed++
		}
	}
	if changed == 0 {
		t.Fatal("lowering user_confirmation changed no task's outcome")
	}
	// A candidate with another playbook asks new questions: misses fail the
	// task by default, and are skipped with on_miss = skip.
	cand2 := base.Clone()
	cand2.Metadata.Version = "2.2.0"
	cand2.Playbook = append(cand2.Playbook, strategy.Bullet{ID: "reasoning-00009", Section: "reasoning", Content: "New insight"})
	res = replayAll(t, replay.Config{Prepare: prepare, Source: src, Pipeline: "email-triage",
		Strategies: []*strategy.Strategy{cand2}, Workers: 2, Logger: quiet})
	for _, r := range res {
		if r.Status != store.StatusFailed || !strings.Contains(r.Error, "no recording for this call") || r.Outcome.Confidence != 0 {
			t.Fatalf("miss: %+v", r)
		}
	}
	res = replayAll(t, replay.Config{Prepare: prepare, Source: src, Pipeline: "email-triage",
		Strategies: []*strategy.Strategy{cand2}, Workers: 2, OnMiss: replay.MissSkip, Logger: quiet})
	for _, r := range res {
		if !r.Skipped {
			t.Fatalf("skip: %+v", r)
		}
	}
}

func TestSampleAndShards(t *testing.T) {
	src := record(t, 30)
	base := load(t, "../../../pipelines/email-triage/strategies/email-handler.toml")
	cfg := replay.Config{Prepare: prepare, Source: src, Pipeline: "email-triage", Strategies: []*strategy.Strategy{base}, Workers: 2, Logger: quiet}
	all := replayAll(t, cfg)
	// Shards partition the tasks.
	seen := map[string]bool{}
	for i := 0; i < 3; i++ {
		c := cfg
		c.Shard, c.Shards = i, 3
		for _, r := range replayAll(t, c) {
			if seen[r.Task] {
				t.Fatalf("task %s in two shards", r.Task)
			}
			seen[r.Task] = true
		}
	}
	if len(seen) != len(all) {
		t.Fatalf("shards cover %d tasks, want %d", len(seen), len(all))
	}
	// Stratified samples keep proportions and depend only on the seed.
	c := cfg
	c.Sample, c.StratifyBy, c.Seed = 10, "tags.difficulty", 7
	s1 := replayAll(t, c)
	s2 := replayAll(t, c)
	if len(s1) != 10 || !reflect.DeepEqual(s1, s2) {
		t.Fatalf("sample: %d results, deterministic %v", len(s1), reflect.DeepEqual(s1, s2))
	}
	hard := 0
	for _, r := range s1 {
		if strings.Contains(strings.Join(r.Tags, ","), "difficulty=hard") {
			hard++
		}
	}
	if hard != 5 {
		t.Fatalf("%d hard tasks in a sample of 10 from an even split", hard)
	}
	c.Seed = 8
	if s3 := replayAll(t, c); reflect.DeepEqual(s1, s3) {
		t.Fatal("another seed chose the same sample")
	}
}

func TestMain(m *testing.M) {
	if _, err := os.Stat(filepath.Join("..", "..", "..", "pipelines", "email-triage", "pipeline.toml")); err != nil {
		fmt.Fprintln(os.Stderr, "replay tests need the email-triage example:", err)
		os.Exit(1)
	}
	code := m.Run()
	plugintest.Cleanup()
	os.Exit(code)
}

// Recordings made before executions carried their trace replay the same:
// the trace is rebuilt from the spans.
func TestReplayWithoutStoredTrace(t *testing.T) {
	src := record(t, 10)
	ctx := context.Background()
	for i := 0; i < 10; i++ {
		tree, err := src.Tree(ctx, fmt.Sprintf("task-%03d", i))
		if err != nil {
			t.Fatal(err)
		}
		for _, ex := range tree.Executions {
			e := ex.Execution
			if e.Trace == nil {
				t.Fatalf("task-%03d: live execution has no trace", i)
			}
			e.Trace = nil
			if err := src.PutExecution(ctx, &e); err != nil {
				t.Fatal(err)
			}
		}
	}
	base := load(t, "../../../pipelines/email-triage/strategies/email-handler.toml")
	for _, r := range replayAll(t, replay.Config{Prepare: prepare, Source: src, Pipeline: "email-triage",
		Strategies: []*strategy.Strategy{base}, Workers: 2, Logger: quiet}) {
		if !r.Reproduced {
			t.Fatalf("task %s: %+v", r.Task, r.Divergence)
		}
	}
}

// TestCacheServesAndInvalidates: a second replay is served from the cache
// with equal results; a recording answered differently (a dataset
// re-imported with other answers under the same request hashes) makes the
// tasks that read it replay again instead of serving a stale result.
func TestCacheServesAndInvalidates(t *testing.T) {
	ctx := context.Background()
	src := record(t, 6)
	entries, err := plugin.Discover(nil, sdk.Registered())
	if err != nil {
		t.Fatal(err)
	}
	cache, err := replay.OpenDirCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	base := load(t, "../../../pipelines/email-triage/strategies/email-handler.toml")
	cfg := replay.Config{Source: src, Pipeline: "email-triage", Strategies: []*strategy.Strategy{base}, Workers: 2, Logger: quiet,
		Prepare: prepare, Cache: cache, Plugins: plugin.NewRegistry(entries), Version: "test"}
	collect := func() []replay.Result {
		t.Helper()
		var out []replay.Result
		if err := replay.Run(ctx, cfg, func(r replay.Result) error { out = append(out, r); return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	first := collect()
	second := collect()
	for i := range first {
		if first[i].Cached || !second[i].Cached {
			t.Fatalf("task %s: cached %v then %v", first[i].Task, first[i].Cached, second[i].Cached)
		}
		a, b := first[i], second[i]
		a.Cached, b.Cached = false, false
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("cached result differs:\n%+v\n%+v", a, b)
		}
	}

	// Answer task-001's model call differently under the same hash.
	var buf strings.Builder
	if _, err := src.Export(ctx, &buf, store.ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	var hash string
	for _, line := range strings.Split(buf.String(), "\n") {
		var rec struct {
			Type, Hash, Kind, Task string
		}
		json.Unmarshal([]byte(line), &rec)
		if rec.Type == "recording" && rec.Kind == "chat" && rec.Task == "task-001" {
			hash = rec.Hash
		}
	}
	rec, err := src.Recording(ctx, hash)
	if err != nil {
		t.Fatalf("recording of task-001 (%q): %v", hash, err)
	}
	rec.Response = json.RawMessage(`{"text":"{\"action\": \"archive\", \"confidence\": 0.99}","usage":{"input_tokens":1,"output_tokens":1},"finish_reason":"stop"}`)
	if err := src.PutRecording(ctx, rec); err != nil {
		t.Fatal(err)
	}
	third := collect()
	for i, r := range third {
		if want := r.Task != "task-001"; r.Cached != want {
			t.Errorf("task %s: cached %v after task-001's recording changed, want %v", r.Task, r.Cached, want)
		}
		if r.Task == "task-001" && reflect.DeepEqual(r.Outcome, first[i].Outcome) && r.Reproduced == first[i].Reproduced {
			t.Errorf("task-001: the changed answer changed nothing: %+v", r)
		}
	}

	// A cache needs the registry to key results by the plugins.
	cfg.Plugins = nil
	if err := replay.Run(ctx, cfg, func(replay.Result) error { return nil }); err == nil || !strings.Contains(err.Error(), "registry") {
		t.Fatalf("a cache without a registry: %v", err)
	}
}

// TestRunWaitsForWorkers: Run stops early when emit fails, and returns
// only once every worker has stopped — one still in a task reads the
// source, which the caller closes as Run returns.
func TestRunWaitsForWorkers(t *testing.T) {
	src := record(t, 4)
	base := load(t, "../../../pipelines/email-triage/strategies/email-handler.toml")
	cfg := replay.Config{Prepare: prepare, Source: src, Pipeline: "email-triage", Strategies: []*strategy.Strategy{base}, Workers: 2, Logger: quiet}
	held, release, waiting := make(chan struct{}), make(chan struct{}), make(chan struct{})
	defer replay.SetRunHooks(func(ctx context.Context, i int) {
		if i == 1 { // held in its task until Run has stopped
			close(held)
			<-ctx.Done()
			<-release
		}
	}, func() { close(waiting) })()
	runDone := make(chan error, 1)
	go func() {
		runDone <- replay.Run(context.Background(), cfg, func(replay.Result) error {
			<-held // task 1 is in a worker
			return errors.New("emit refused")
		})
	}()
	select {
	case err := <-runDone:
		t.Fatalf("Run returned (%v) while a worker was still in a task", err)
	case <-waiting:
	}
	close(release)
	if err := <-runDone; err == nil || !strings.Contains(err.Error(), "emit refused") {
		t.Fatalf("Run: %v, want emit's error", err)
	}
}
