package temporal

import (
	"context"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/serve"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// Sink is where a worker's results land: recordings (read before a
// provider is asked, written as soon as it answered), the spans of a long
// run in batches as it goes (StageSpans, invisible until the run is
// recorded) and finished runs. RecordRun and StageSpans may be called
// again with the same data and must then change nothing.
type Sink interface {
	run.Recorder
	RecordRun(ctx context.Context, r *run.RunRecord) error
	StageSpans(ctx context.Context, spans []store.Span) error
}

// StoreSink writes into a store the worker holds itself (one worker per
// store: Badger has a single writer).
func StoreSink(s *store.Store) Sink { return storeSink{s} }

type storeSink struct{ *store.Store }

func (k storeSink) RecordRun(ctx context.Context, r *run.RunRecord) error {
	return run.RecordRun(ctx, k.Store, r)
}

// ServeSink writes through the sink routes of the `sextant serve` that
// holds the store at base (any number of workers, any machines).
func ServeSink(base, token string) Sink { return serve.NewSink(base, token, nil) }

var (
	_ Sink = storeSink{}
	_ Sink = (*serve.Sink)(nil)
)

// WithRedactor returns rec hashing requests with red: a pipeline's
// [store] redact patterns, so that its recordings are keyed as a local
// run over a store opened with them keys them.
func WithRedactor(rec run.Recorder, red *store.Redactor) run.Recorder { return redacting{rec, red} }

type redacting struct {
	run.Recorder
	red *store.Redactor
}

func (r redacting) Redactor() *store.Redactor { return r.red }
