package temporal

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// LoadPipelines prepares, with prepare, every pipeline under dir
// (DIR/*/pipeline.toml and DIR/*.toml) for a worker: each records into
// sink through its own [store] redactor, and runs the live strategy
// version sink reports when a run begins. The function returned releases
// their plugins; on error nothing stays open. A missing dir, two
// pipelines of one name, a bad redact pattern or no pipeline at all is an
// error matching sdk.ErrInvalid.
func LoadPipelines(ctx context.Context, dir string, sink Sink, prepare func(context.Context, string) (*run.Prepared, error), logger *slog.Logger) (LivePipelines, func(context.Context), error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, nil, sdk.Invalid(sdk.Problem{Message: fmt.Sprintf("--pipelines: %v", err)})
	}
	var files []string
	for _, pat := range []string{"*/pipeline.toml", "*.toml"} {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			return nil, nil, err
		}
		files = append(files, m...)
	}
	m := LivePipelines{}
	var preps []*run.Prepared
	closeAll := func(ctx context.Context) {
		for _, p := range preps {
			p.Close(ctx)
		}
	}
	for _, f := range files {
		p, err := prepare(ctx, f)
		if err == nil {
			preps = append(preps, p)
			m[p.Pipeline.Name], err = load(m, f, p, sink, logger)
		}
		if err != nil {
			closeAll(context.WithoutCancel(ctx))
			return nil, nil, err
		}
	}
	if len(m) == 0 {
		return nil, nil, sdk.Invalid(sdk.Problem{Message: fmt.Sprintf("--pipelines %s: no pipeline (*/pipeline.toml or *.toml)", dir)})
	}
	return m, closeAll, nil
}

// load is p, the pipeline of file f, recording into sink through p's
// redactor; m holds the pipelines loaded before it.
func load(m LivePipelines, f string, p *run.Prepared, sink Sink, logger *slog.Logger) (*livePipeline, error) {
	if _, dup := m[p.Pipeline.Name]; dup {
		return nil, sdk.Invalid(sdk.Problem{File: f, Message: fmt.Sprintf("pipeline %q again", p.Pipeline.Name)})
	}
	var rec run.Recorder = sink
	if len(p.Pipeline.Store.Redact) > 0 {
		red, err := store.NewRedactor(p.Pipeline.Store.Redact...)
		if err != nil {
			return nil, sdk.Invalid(sdk.Problem{File: p.Pipeline.File, Message: fmt.Sprintf("store.redact: %v", err)})
		}
		rec = WithRedactor(rec, red)
	}
	return newLivePipeline(p, sink, rec, run.Config{Logger: logger})
}
