package replay_test

import (
	"testing"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/replay"
)

func TestNewSettings(t *testing.T) {
	p := &pipeline.Pipeline{}
	p.Replay.Sample, p.Replay.Workers, p.Replay.Seed, p.Replay.OnMiss, p.Replay.StratifyBy = 50, 4, 7, replay.MissSkip, "tags.difficulty"
	for _, tc := range []struct {
		name string
		o    replay.Overrides
		want replay.Settings
		err  string
	}{
		{"none", replay.Overrides{Sample: -1}, replay.Settings{Sample: 50, Workers: 4, Seed: 7, OnMiss: "skip", StratifyBy: "tags.difficulty"}, ""},
		{"all", replay.Overrides{Sample: 0, Workers: 2, Seed: 9, OnMiss: "live"}, replay.Settings{Sample: 0, Workers: 2, Seed: 9, OnMiss: "live", StratifyBy: "tags.difficulty"}, ""},
		{"bad on-miss", replay.Overrides{Sample: -1, OnMiss: "retry"}, replay.Settings{}, `--on-miss: "retry" is not fail, skip or live`},
		{"negative sample", replay.Overrides{Sample: -5}, replay.Settings{}, "--sample -5: want a number of tasks, or 0 for all"},
		{"negative workers", replay.Overrides{Sample: -1, Workers: -2}, replay.Settings{}, "--workers -2: want at least 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := replay.NewSettings(p, tc.o)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err %v, want %s", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}
