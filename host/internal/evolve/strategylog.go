package evolve

import (
	"context"
	"fmt"
	"io"

	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// WriteStrategyLog writes what sextant strategy log prints for the
// strategy name: its promoted versions recs (report.WriteStrategyLog)
// and the pipelines where one is live (WriteLiveIn), or that none is
// recorded.
func WriteStrategyLog(ctx context.Context, w io.Writer, st *store.Store, name string, recs []store.StrategyRecord) error {
	w = report.TermSafe(w)
	if len(recs) == 0 {
		_, err := fmt.Fprintf(w, "no promoted versions of %s recorded\n", name)
		return err
	}
	if err := report.WriteStrategyLog(w, recs); err != nil {
		return err
	}
	return WriteLiveIn(ctx, w, st, name)
}
