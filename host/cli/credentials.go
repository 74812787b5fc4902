package cli

import (
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/run"
)

// replayCredentials is how replay, gate and evolve prepare a pipeline:
// they need no provider credentials, since every call is served from a
// recording, unless a miss goes to the real provider (on_miss = "live").
// For a live replay it checks at once that every api_key_env is set, so a
// missing key is one clear error before any work, not one per task.
func replayCredentials(p *pipeline.Pipeline, onMiss string) ([]run.PrepareOption, error) {
	if onMiss == replay.MissLive {
		return nil, run.CheckCredentials(p)
	}
	return []run.PrepareOption{run.WithoutCredentials()}, nil
}
