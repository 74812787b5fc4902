package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/pipeline"
	"github.com/sextant-dev/sextant/host/store"
)

// storeFlags locate the store: --store, $SEXTANT_STORE, .sextant beside
// --pipeline (or the pipeline argument), else ./.sextant.
type storeFlags struct {
	dir      string
	pipeline string
}

func (f *storeFlags) add(c *cobra.Command, withPipeline bool) {
	c.Flags().StringVar(&f.dir, "store", "", "store directory (default: $SEXTANT_STORE, else .sextant beside the pipeline, else ./.sextant)")
	if withPipeline {
		c.Flags().StringVar(&f.pipeline, "pipeline", "", "pipeline file whose store to use")
	}
}

// resolveFor locates the store of a loaded pipeline: flags and
// environment first, then the pipeline's [store] dir.
func (f *storeFlags) resolveFor(p *pipeline.Pipeline) string {
	if f.dir != "" || os.Getenv("SEXTANT_STORE") != "" {
		return f.resolve("")
	}
	return p.Path(p.Store.Dir)
}

func (f *storeFlags) resolve(pipelineFile string) string {
	switch {
	case f.dir != "":
		return f.dir
	case os.Getenv("SEXTANT_STORE") != "":
		return os.Getenv("SEXTANT_STORE")
	case pipelineFile != "":
		return filepath.Join(filepath.Dir(pipelineFile), ".sextant")
	case f.pipeline != "":
		return filepath.Join(filepath.Dir(f.pipeline), ".sextant")
	}
	return ".sextant"
}

// openStore opens the store. A read-only open of a store that does not
// exist is a clear error rather than an empty store created by accident.
func (a *app) openStore(ctx context.Context, dir string, readOnly bool) (*store.Store, error) {
	return a.openStoreWith(ctx, dir, readOnly, nil)
}

// openStoreWith opens the store with a pipeline's [store] settings
// (redaction patterns, fsync); p may be nil.
func (a *app) openStoreWith(ctx context.Context, dir string, readOnly bool, p *pipeline.Pipeline) (*store.Store, error) {
	if readOnly {
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			return nil, withInvalid(fmt.Errorf("no store at %s (run a pipeline first, or pass --store DIR)", dir))
		}
	}
	cfg := store.NewConfig().WithLogger(a.logger).WithReadOnly(readOnly).WithSyncCheckpoints(false)
	if p != nil {
		cfg = cfg.WithSyncCheckpoints(p.Store.FSync)
		if len(p.Store.Redact) > 0 {
			red, err := store.NewRedactor(p.Store.Redact...)
			if err != nil {
				return nil, withInvalid(fmt.Errorf("%s: store.redact: %w", p.File, err))
			}
			cfg = cfg.WithRedactor(red)
		}
	}
	s, err := store.Open(ctx, dir, cfg)
	if err != nil {
		var le *store.LockedError
		if errors.As(err, &le) {
			return nil, err
		}
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	return s, nil
}
