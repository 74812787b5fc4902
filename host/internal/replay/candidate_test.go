package replay_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

// TestCandidateSkipsChangedCheck: a routine changed under the recorded
// strategy version (or, with on_miss = live, a rules file) refuses a
// replay, but not a candidate's (Config.Candidate), whose results are
// then none of them self-replays.
func TestCandidateSkipsChangedCheck(t *testing.T) {
	src := record(t, 3)
	base := load(t, "../../../pipelines/email-triage/strategies/email-handler.toml")
	for _, tc := range []struct {
		name, pipeline, onMiss string
	}{
		{"routine", copyTriage(t, "email-triage.bpmn", func(s string) string { return s + "<!-- edited -->\n" }), ""},
		{"rules", copyTriage(t, "responses.toml", func(s string) string { return s + "# edited\n" }), replay.MissLive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := replay.Config{Prepare: preparer(tc.pipeline), Source: src, Pipeline: "email-triage",
				Strategies: []*strategy.Strategy{base}, Workers: 1, OnMiss: tc.onMiss, Logger: quiet}
			err := replay.Run(context.Background(), cfg, func(replay.Result) error { return nil })
			if !errors.Is(err, replay.ErrChanged) {
				t.Fatalf("the baseline's replay: err %v, want ErrChanged", err)
			}
			cfg.Candidate = true
			res := replayAll(t, cfg)
			if len(res) != 3 {
				t.Fatalf("%d results, want 3", len(res))
			}
			for _, r := range res {
				if r.SelfReplay || r.Reproduced || r.Divergence != nil || r.Status != store.StatusCompleted {
					t.Errorf("task %s: self-replay %v reproduced %v divergence %v status %s", r.Task, r.SelfReplay, r.Reproduced, r.Divergence, r.Status)
				}
			}
		})
	}
}

// TestCandidateCacheApart: a candidate equal in effect to its base has the
// same fingerprint, yet its cached results (no self-replay) and the
// baseline's (self-replays) are kept apart.
func TestCandidateCacheApart(t *testing.T) {
	src := record(t, 2)
	entries, err := plugin.Discover(nil, sdk.Registered())
	if err != nil {
		t.Fatal(err)
	}
	cache, err := replay.OpenDirCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	base := load(t, "../../../pipelines/email-triage/strategies/email-handler.toml")
	cfg := replay.Config{Source: src, Pipeline: "email-triage", Strategies: []*strategy.Strategy{base}, Workers: 1, Logger: quiet,
		Prepare: prepare, Cache: cache, Plugins: plugin.NewRegistry(entries), Version: "test"}
	cand := cfg
	cand.Candidate = true
	for i, step := range []struct {
		cfg          replay.Config
		self, cached bool
	}{{cfg, true, false}, {cand, false, false}, {cand, false, true}, {cfg, true, true}} {
		for _, r := range replayAll(t, step.cfg) {
			if r.SelfReplay != step.self || r.Reproduced != step.self || r.Cached != step.cached {
				t.Errorf("replay %d, task %s: self-replay %v reproduced %v cached %v; want self-replay %v cached %v",
					i, r.Task, r.SelfReplay, r.Reproduced, r.Cached, step.self, step.cached)
			}
		}
	}
}

// TestDatasetAnswersKeepLiveCalls: a dataset's tasks replayed with a
// changed rubric ask the judge live; with the dataset's answers store as
// Record, a replay of the same dataset, opened again, asks nobody.
func TestDatasetAnswersKeepLiveCalls(t *testing.T) {
	ctx := context.Background()
	up := startUpstream(t)
	recorded, _ := recordGraded(t, gradedPipeline(t, up.URL, gradedAsserts), 2)
	dataset := filepath.Join(t.TempDir(), "graded.jsonl")
	f, err := os.Create(dataset)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := recorded.Export(ctx, f, store.ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	up.Close()

	again := startUpstream(t)
	path := gradedPipeline(t, again.URL, strings.Replace(gradedAsserts, "suits the e-mail", "fits the e-mail", 1))
	base := load(t, filepath.Join(filepath.Dir(path), "strategies/email-handler.toml"))
	cacheDir := t.TempDir()
	gate := func() []replay.Result {
		t.Helper()
		src, err := replay.OpenDataset(ctx, dataset, cacheDir, quiet)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		answers, err := replay.OpenDatasetAnswers(ctx, src, quiet)
		if err != nil {
			t.Fatal(err)
		}
		defer answers.Close()
		if want := src.Dir() + ".live"; answers.Dir() != want {
			t.Fatalf("answers at %s, want %s", answers.Dir(), want)
		}
		return replayAll(t, replay.Config{Prepare: preparer(path), Source: src, Pipeline: "email-triage", OnMiss: replay.MissLive,
			Strategies: []*strategy.Strategy{base}, Workers: 1, Logger: quiet, Record: answers, Candidate: true})
	}
	for _, r := range gate() {
		if len(r.Live) != 1 {
			t.Errorf("first replay: task %s live calls %+v, want the judge's", r.Task, r.Live)
		}
	}
	if got := again.calls.Load(); got != 2 {
		t.Fatalf("the judge was asked %d times, want 2", got)
	}
	for _, r := range gate() {
		if len(r.Live) != 0 || r.Misses != 0 {
			t.Errorf("second replay: task %s live %+v misses %d", r.Task, r.Live, r.Misses)
		}
	}
	if got := again.calls.Load(); got != 2 {
		t.Fatalf("the kept answers were asked for again: %d calls, want 2", got)
	}
}

// TestLiveCostStopsStarting: once live calls cost more than the cap, the
// replay fails naming the task that passed it, and no later task starts:
// one worker makes exactly one live call.
func TestLiveCostStopsStarting(t *testing.T) {
	up := startUpstream(t)
	src, _ := recordGraded(t, gradedPipeline(t, up.URL, gradedAsserts), 4)
	up.Close()
	again := startUpstream(t)
	path := gradedPipeline(t, again.URL, strings.Replace(gradedAsserts, "suits the e-mail", "fits the e-mail", 1))
	base := load(t, filepath.Join(filepath.Dir(path), "strategies/email-handler.toml"))
	cfg := replay.Config{Prepare: preparer(path), Source: src, Pipeline: "email-triage", OnMiss: replay.MissLive,
		Strategies: []*strategy.Strategy{base}, Workers: 1, Logger: quiet, MaxLiveCostUSD: 1e-9}
	n := 0
	err := replay.Run(context.Background(), cfg, func(replay.Result) error { n++; return nil })
	if !errors.Is(err, replay.ErrLiveCost) || !strings.HasPrefix(err.Error(), "replay task task-000: live calls over their cost cap: $") || n != 0 {
		t.Fatalf("%d results, err %v", n, err)
	}
	if got := again.calls.Load(); got != 1 {
		t.Fatalf("the judge was asked %d times, want 1 (no task starts once the cap is passed)", got)
	}
}
