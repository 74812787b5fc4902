package replay_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
)

// TestRecordKeepsLiveCalls: a rubric changed since the tasks were recorded
// asks the judge live; each result names that call (the judge's block and
// model, no step), and with Record the answers are kept, so the next
// replay asks nobody. Without Record the next replay asks again.
func TestRecordKeepsLiveCalls(t *testing.T) {
	up := startUpstream(t)
	src, _ := recordGraded(t, gradedPipeline(t, up.URL, gradedAsserts), 2)
	changed := strings.Replace(gradedAsserts, "suits the e-mail", "fits the e-mail", 1)
	up.Close()

	again := startUpstream(t)
	path := gradedPipeline(t, again.URL, changed)
	base := load(t, filepath.Join(filepath.Dir(path), "strategies/email-handler.toml"))
	cfg := replay.Config{Prepare: preparer(path), Source: src, Pipeline: "email-triage", OnMiss: replay.MissLive,
		Strategies: []*strategy.Strategy{base}, Workers: 1, Logger: quiet}

	for _, r := range replayAll(t, cfg) {
		if len(r.Live) != 1 || r.Live[0].CostUSD <= 0 || (r.Live[0] != replay.LiveCall{Kind: "chat", Provider: "judge", Name: "gpt-4o-mini", CostUSD: r.Live[0].CostUSD}) {
			t.Errorf("without Record: task %s live calls %+v", r.Task, r.Live)
		}
	}
	if got := again.calls.Load(); got != 2 {
		t.Fatalf("the judge was asked %d times, want 2", got)
	}
	cfg.Record = src
	replayAll(t, cfg)
	if got := again.calls.Load(); got != 4 {
		t.Fatalf("the replay without Record kept its answers: the judge was asked %d times in all, want 4", got)
	}
	for _, r := range replayAll(t, cfg) {
		if len(r.Live) != 0 || r.Misses != 0 || r.Status != store.StatusCompleted {
			t.Errorf("after Record: task %s live %+v misses %d %s", r.Task, r.Live, r.Misses, r.Status)
		}
	}
	if got := again.calls.Load(); got != 4 {
		t.Fatalf("the recorded answers were asked for again: %d calls, want 4", got)
	}
}
