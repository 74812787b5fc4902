package evolve

import (
	"context"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/replay"
)

// TestReplaySettings: an evolution replays on [evolve] on_miss unless the
// command line names one, and refuses what does not resolve.
func TestReplaySettings(t *testing.T) {
	p, err := pipeline.Load(context.Background(), "../../../pipelines/email-triage/pipeline.toml", nil, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.Replay.OnMiss, p.Evolve.OnMiss = replay.MissFail, replay.MissSkip
	for _, c := range []struct {
		flag, want string
	}{{"", replay.MissSkip}, {replay.MissFail, replay.MissFail}} {
		var e Evolution
		s, err := e.ReplaySettings(p, replay.Overrides{Sample: -1, OnMiss: c.flag})
		if err != nil || s.OnMiss != c.want {
			t.Errorf("--on-miss %q: %q, %v; want %q", c.flag, s.OnMiss, err, c.want)
		}
		if e.Adapter == "" {
			t.Errorf("--on-miss %q: the evolution is not resolved: %+v", c.flag, e)
		}
	}
	if _, err := (&Evolution{}).ReplaySettings(p, replay.Overrides{Sample: -1, OnMiss: "sometimes"}); err == nil {
		t.Error("--on-miss sometimes: no error")
	}
	if _, err := (&Evolution{Adapter: "nightly"}).ReplaySettings(p, replay.Overrides{Sample: -1}); err == nil {
		t.Error("--adapter nightly: no error")
	}
}
