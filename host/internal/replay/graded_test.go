package replay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
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
	"github.com/sextant-dev/sextant/plugins/openai/openaitest"
	"github.com/sextant-dev/sextant/sdk"
)

// gradedUpstream is openaitest.Upstream (the judge rates an archive 5, a
// reply 3, anything else 1) counting the requests it answers.
type gradedUpstream struct {
	*httptest.Server
	calls atomic.Int64
}

func startUpstream(t *testing.T) *gradedUpstream {
	up := &gradedUpstream{}
	h := &openaitest.Upstream{Rules: []openaitest.Rule{{Contains: "archive", Rating: 5}, {Contains: "reply", Rating: 3}}, Default: 1}
	up.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up.calls.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)
	return up
}

// gradedPipeline copies the e-mail triage example to a temporary folder
// with a judge and an embedder at base and the assertions extra, and
// returns the pipeline's path.
func gradedPipeline(t *testing.T, base, extra string) string {
	t.Helper()
	src, dir := "../../../pipelines/email-triage", t.TempDir()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".sextant" {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "pipeline.toml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	add := fmt.Sprintf(`
[providers.judge]
use = "openai"
model = "gpt-4o-mini"
base_url = %q

[providers.embed]
use = "openai"
model = "text-embedding-3-small"
base_url = %q
%s`, base+"/v1", base+"/v1", extra)
	if err := os.WriteFile(path, append(b, add...), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const gradedAsserts = `
[[score.assert]]
type = "rubric"
provider = "judge"
of = "output.action"
value = "The action suits the e-mail."
threshold = 0.75
name = "fit"

[[score.assert]]
type = "similar"
provider = "embed"
of = "output.action"
reference = "truth.action"
threshold = 0.99
name = "same"
`

func preparer(path string) func(ctx context.Context) (*run.Prepared, error) {
	return func(ctx context.Context) (*run.Prepared, error) {
		entries, err := plugin.Discover(nil, sdk.Registered())
		if err != nil {
			return nil, err
		}
		return run.Prepare(ctx, path, plugin.NewRegistry(entries), quiet)
	}
}

// recordGraded runs n tasks of the pipeline at path live into a new store.
func recordGraded(t *testing.T, path string, n int) (*store.Store, map[string][]float64) {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, t.TempDir(), store.NewConfig().WithSyncCheckpoints(false).WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	prep, err := preparer(path)(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close(ctx)
	r := prep.Runner(run.Config{Store: s, Logger: quiet})
	scores := map[string][]float64{}
	for i := 0; i < n; i++ {
		e := emails[i%len(emails)]
		truth, _ := json.Marshal(map[string]string{"action": e.truth})
		res, err := r.Start(ctx, run.Input{ID: fmt.Sprintf("task-%03d", i),
			Input: map[string]any{"from": "x@example.com", "subject": e.subject, "body": e.body}, Truth: truth})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status == store.StatusWaiting {
			if res, err = r.Resume(ctx, res.Task, map[string]any{"answer": "yes"}); err != nil {
				t.Fatal(err)
			}
		}
		if res.Status != store.StatusCompleted || len(res.Graded) != 2 {
			t.Fatalf("task %s: %s, graded %+v", res.Task, res.Status, res.Graded)
		}
		for _, g := range res.Graded {
			if g.Err != "" {
				t.Fatalf("task %s: %+v", res.Task, g)
			}
			scores[res.Task] = append(scores[res.Task], g.Score)
		}
	}
	return s, scores
}

// TestGradedReplaysOffline: a live run grades its output through the judge
// and the embedder, recording their calls with the task; a replay with
// the upstream gone gives every task the same scores, reproduces its
// trace (the grade's calls are not part of it) and passes or fails the
// assertions as the scores say.
func TestGradedReplaysOffline(t *testing.T) {
	up := startUpstream(t)
	path := gradedPipeline(t, up.URL, gradedAsserts)
	src, live := recordGraded(t, path, 5)
	if got := up.calls.Load(); got != 10 {
		t.Fatalf("the live runs made %d grade calls, want 10 (a judge and an embedding each)", got)
	}
	up.Close()

	base := load(t, filepath.Join(filepath.Dir(path), "strategies/email-handler.toml"))
	res := replayAll(t, replay.Config{Prepare: preparer(path), Source: src, Pipeline: "email-triage",
		Strategies: []*strategy.Strategy{base}, Workers: 2, Logger: quiet})
	if len(res) != 5 {
		t.Fatalf("%d results", len(res))
	}
	passes := 0
	for _, r := range res {
		if r.Status != store.StatusCompleted || !r.Reproduced || r.Misses != 0 {
			t.Fatalf("task %s: %+v %+v", r.Task, r, r.Divergence)
		}
		if got, want := []float64{r.Outcome.Rewards["fit"], r.Outcome.Rewards["same"]}, live[r.Task]; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("task %s replayed scores %v, live %v", r.Task, got, want)
		}
		want := r.Outcome.Rewards["fit"] >= 0.75 && r.Outcome.Rewards["same"] >= 0.99 && r.Output["action"] != nil
		if r.Outcome.Success && !want {
			t.Errorf("task %s succeeded with scores %v", r.Task, r.Outcome.Rewards)
		}
		if r.Outcome.Success {
			passes++
		}
	}
	// On purpose: some outputs pass both checks, some fail one.
	if passes == 0 || passes == len(res) {
		t.Fatalf("%d of %d tasks passed: the data should give both verdicts", passes, len(res))
	}
}

// TestGradedMissFollowsOnMiss: a rubric changed since the tasks were
// recorded asks the judge something it was never asked. fail: the task's
// replay fails naming the assertion; skip: the task is left out; live:
// the judge answers (and is asked once per task).
func TestGradedMissFollowsOnMiss(t *testing.T) {
	up := startUpstream(t)
	src, _ := recordGraded(t, gradedPipeline(t, up.URL, gradedAsserts), 2)
	changed := strings.Replace(gradedAsserts, "suits the e-mail", "fits the e-mail", 1)
	up.Close()

	again := startUpstream(t)
	path := gradedPipeline(t, again.URL, changed)
	base := load(t, filepath.Join(filepath.Dir(path), "strategies/email-handler.toml"))
	cfg := replay.Config{Prepare: preparer(path), Source: src, Pipeline: "email-triage",
		Strategies: []*strategy.Strategy{base}, Workers: 1, Logger: quiet}

	cfg.OnMiss = replay.MissFail
	for _, r := range replayAll(t, cfg) {
		if r.Status != store.StatusFailed || !strings.Contains(r.Error, "score.assert[0] (rubric)") || !strings.Contains(r.Error, "no recording") || r.Outcome.Success {
			t.Errorf("fail: task %s: %s %q", r.Task, r.Status, r.Error)
		}
	}
	cfg.OnMiss = replay.MissSkip
	for _, r := range replayAll(t, cfg) {
		if !r.Skipped {
			t.Errorf("skip: task %s not skipped", r.Task)
		}
	}
	if again.calls.Load() != 0 {
		t.Fatalf("fail and skip reached the judge %d times", again.calls.Load())
	}
	cfg.OnMiss = replay.MissLive
	for _, r := range replayAll(t, cfg) {
		if r.Status != store.StatusCompleted || r.Skipped || r.Misses != 1 {
			t.Errorf("live: task %s: %s misses %d %q", r.Task, r.Status, r.Misses, r.Error)
		}
	}
	if got := again.calls.Load(); got != 2 {
		t.Fatalf("live asked the judge %d times, want 2 (the embeddings were recorded)", got)
	}
}

// TestSimilarNeedsAnEmbedder: a similar check whose provider cannot embed
// is refused before anything is replayed.
func TestSimilarNeedsAnEmbedder(t *testing.T) {
	up := startUpstream(t)
	path := gradedPipeline(t, up.URL, `
[[score.assert]]
type = "similar"
provider = "default"
value = "archive"
threshold = 0.5
`)
	src := record(t, 1)
	base := load(t, filepath.Join(filepath.Dir(path), "strategies/email-handler.toml"))
	err := replay.Run(context.Background(), replay.Config{Prepare: preparer(path), Source: src, Pipeline: "email-triage",
		Strategies: []*strategy.Strategy{base}, Workers: 1, Logger: quiet}, func(replay.Result) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "score.assert[0].provider: providers.default offers no embeddings") {
		t.Fatalf("err %v", err)
	}
}
