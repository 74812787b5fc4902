package evolve

import (
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/replay"
)

// ReplaySettings resolves e against p (Resolve) and returns the settings
// of the evolution's replays: [replay] with the command line's overrides
// o, on-miss from [evolve] on_miss unless o names one. Its errors are the
// command line's.
func (e *Evolution) ReplaySettings(p *pipeline.Pipeline, o replay.Overrides) (replay.Settings, error) {
	settings, err := replay.NewSettings(p, o)
	if err != nil {
		return replay.Settings{}, err
	}
	if o.OnMiss == "" && p.Evolve.OnMiss != "" {
		settings.OnMiss = p.Evolve.OnMiss
	}
	if err := e.Resolve(p); err != nil {
		return replay.Settings{}, err
	}
	return settings, nil
}
