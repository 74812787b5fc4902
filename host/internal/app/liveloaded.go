package app

import (
	"context"
	"log/slog"
	"os"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/project"
	"github.com/sextant-dev/sextant/host/internal/run"
)

// FollowLiveLoaded switches loaded (for replay, gate or evolve) to the
// pipeline's live version, read from its store when there is one: the
// store the store rule finds from storeFlag (--store), else the
// pipeline's own. It returns the pipeline as configured, which moves of
// the live version need; with no strategy file or no store, that is
// loaded's pipeline, unchanged.
func FollowLiveLoaded(ctx context.Context, loaded *run.Loaded, storeFlag string, logger *slog.Logger, command string) (*pipeline.Pipeline, error) {
	conf := loaded.Pipeline
	if conf.Strategy.File == "" {
		return conf, nil
	}
	loc, ok, err := project.CommonStore(storeFlag)
	if err != nil {
		return nil, invalid(err)
	}
	if !ok {
		loc.Dir = project.PipelineStore(conf.File, conf.Store.Dir)
	}
	if _, err := os.Stat(loc.Dir); err != nil {
		return conf, nil // no store: nothing promoted, the configured file is live
	}
	s, err := OpenStore(ctx, loc.Dir, Read, conf, logger, command)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	p, st, err := LiveFor(ctx, s, conf, logger)
	if err != nil || p == nil {
		return conf, err
	}
	loaded.Pipeline, loaded.Strategy = p, st
	return conf, nil
}
