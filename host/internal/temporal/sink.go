package temporal

import (
	"context"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// Sink is where a worker's results land: recordings (read before a
// provider is asked, written as soon as it answered), the spans of a long
// run in batches as it goes (StageSpans, invisible until the run is
// recorded) and finished runs. RecordRun and StageSpans may be called
// again with the same data and must then change nothing. Live reads a
// pipeline's live strategy version (evolve.LiveNamed) from the store, as a
// run begins.
type Sink interface {
	run.Recorder
	RecordRun(ctx context.Context, r *run.RunRecord) error
	StageSpans(ctx context.Context, spans []store.Span) error
	Live(ctx context.Context, pipeline string, conf evolve.LiveVersion, pinned bool) (*evolve.Live, error)
}

// StoreSink writes into a store the worker holds itself (one worker per
// store: Badger has a single writer).
func StoreSink(s *store.Store) Sink { return storeSink{s} }

type storeSink struct{ *store.Store }

func (k storeSink) Live(ctx context.Context, pipeline string, conf evolve.LiveVersion, pinned bool) (*evolve.Live, error) {
	return evolve.LiveNamed(ctx, k.Store, pipeline, conf, pinned)
}

func (k storeSink) RecordRun(ctx context.Context, r *run.RunRecord) error {
	return run.RecordRun(ctx, k.Store, r)
}

// The other Sink is the sink routes of a `sextant serve` that holds the
// store (any number of workers, any machines); the CLI wires it in, so
// that this package does not depend on the server.
var _ Sink = storeSink{}

// WithRedactor returns rec hashing requests with red: a pipeline's
// [store] redact patterns, so that its recordings are keyed as a local
// run over a store opened with them keys them.
func WithRedactor(rec run.Recorder, red *store.Redactor) run.Recorder { return redacting{rec, red} }

type redacting struct {
	run.Recorder
	red *store.Redactor
}

func (r redacting) Redactor() *store.Redactor { return r.red }
