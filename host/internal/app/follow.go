package app

import (
	"context"
	"log/slog"
	"path/filepath"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
)

// LiveFor is the pipeline conf switched to its live strategy version
// (evolve.RunStrategy, read from s): a copy whose [strategy] file is the
// live one, with that strategy; nil, nil when the configured file is what
// runs (no strategy, pinned, or nothing promoted).
func LiveFor(ctx context.Context, s *store.Store, conf *pipeline.Pipeline, logger *slog.Logger) (*pipeline.Pipeline, *strategy.Strategy, error) {
	if conf.Strategy.File == "" || conf.Strategy.Pin {
		return nil, nil, nil
	}
	st, file, err := evolve.RunStrategy(ctx, s, conf)
	if err != nil {
		return nil, nil, invalid(err)
	}
	if filepath.Clean(file) == filepath.Clean(conf.Strategy.File) {
		return nil, nil, nil
	}
	cp := *conf
	cp.Strategy.File = file
	logger.Info("following the live strategy version", "pipeline", conf.Name, "strategy", st.Metadata.Name, "version", st.Metadata.Version, "file", file)
	return &cp, st, nil
}

// FollowLive switches prep, about to start a run, to the pipeline's live
// strategy version, read from s.
func FollowLive(ctx context.Context, s *store.Store, prep *run.Prepared, logger *slog.Logger) error {
	p, st, err := LiveFor(ctx, s, prep.Pipeline, logger)
	if err != nil || p == nil {
		return err
	}
	prep.Pipeline, prep.Strategy = p, st
	return nil
}

// taskStrategy switches prep, about to continue task, to the strategy
// version the task started under when the live version has moved since
// (a run never changes strategy half-way): the configured file or a
// promoted version beside it, with the task's recorded hash.
func taskStrategy(ctx context.Context, s *store.Store, prep *run.Prepared, task string) {
	p := prep.Pipeline
	t, err := s.Task(ctx, task)
	if err != nil || p.Strategy.File == "" || t.Strategy.Hash == "" || t.Strategy.Hash == prep.Strategy.Hash() || t.Strategy.Name != prep.Strategy.Metadata.Name {
		return // the engine reports a missing task or another strategy
	}
	rel := filepath.Join(filepath.Dir(p.Strategy.File), t.Strategy.Name+"-"+t.Strategy.Version+".toml")
	for _, f := range []string{p.Strategy.File, rel} {
		if st, err := strategy.Load(p.Path(f)); err == nil && st.Hash() == t.Strategy.Hash {
			cp := *p
			cp.Strategy.File = f
			prep.Pipeline, prep.Strategy = &cp, st
			return
		}
	}
}
