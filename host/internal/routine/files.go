package routine

import (
	"context"
	"log/slog"
	"path/filepath"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/run"
)

// Files is the [Loader] of the routine commands: it loads pipelines and
// routine files as the other commands do, with the plugins Registry finds
// for the file's directory (the plugins folder beside it, then the search
// path).
type Files struct {
	Registry func(dir string) (*plugin.Registry, error)
	Logger   *slog.Logger
	// Need, when set, checks that a pipeline file is there before it is
	// read, so the caller can name the nearest file when it is not.
	Need func(what, path string) error
}

var _ Loader = Files{}

// Pipeline loads and validates the pipeline at path and its routine.
func (f Files) Pipeline(ctx context.Context, path string) (*run.Loaded, error) {
	reg, err := f.registry("pipeline", path)
	if err != nil {
		return nil, err
	}
	return run.Load(ctx, path, reg, f.Logger)
}

// Prepare loads the pipeline at path ready to run, its navigator open.
func (f Files) Prepare(ctx context.Context, path string) (*run.Prepared, error) {
	reg, err := f.registry("pipeline", path)
	if err != nil {
		return nil, err
	}
	return run.Prepare(ctx, path, reg, f.Logger)
}

// Routine loads the routine file at path as [Load] does.
func (f Files) Routine(ctx context.Context, path, navigator string, decisions []string) (*Loaded, error) {
	reg, err := f.registry("", path)
	if err != nil {
		return nil, err
	}
	return Load(ctx, reg, path, navigator, decisions)
}

// registry is the registry for the file at path, after Need's check when
// what names the file ("" when Load reports a missing one itself).
func (f Files) registry(what, path string) (*plugin.Registry, error) {
	if f.Need != nil && what != "" {
		if err := f.Need(what, path); err != nil {
			return nil, err
		}
	}
	return f.Registry(filepath.Dir(path))
}
