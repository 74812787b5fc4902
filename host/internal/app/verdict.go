package app

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/serve"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// Verdict is a judged replay to record: sextant replay with a candidate,
// gate or merge (Command) of Pipeline, in the store at Store.
type Verdict struct {
	Store, Command, Pipeline string
	Judgment                 *evolve.Judgment
	// Output is the output kept of a task under the strategy of a hash
	// (evolve.Kept.Output); nil: none was kept.
	Output func(task, hash string) (json.RawMessage, bool)
}

// SaveVerdict records v in its store, through the sextant serve that
// holds it if one does (which then picks its id and time). A store that
// does not exist records nothing: a replay of a dataset needs none.
func SaveVerdict(ctx context.Context, v Verdict, logger *slog.Logger) error {
	if _, err := os.Stat(v.Store); err != nil {
		return nil
	}
	s, _, err := openStore(ctx, v.Store, Update, nil, logger)
	if err != nil {
		var le *store.LockedError
		if !errors.As(err, &le) {
			return err
		}
		c, ok := serve.Discover(v.Store, le.PID)
		if !ok {
			return err
		}
		rec, err := evolve.NewVerdict(v.Judgment, v.Command, v.Pipeline, "", time.Now(), v.Output)
		if err != nil {
			return err
		}
		return c.SaveComparison(ctx, rec)
	}
	defer s.Close()
	rec, err := evolve.NewVerdict(v.Judgment, v.Command, v.Pipeline, s.NewID(), s.Now(), v.Output)
	if err != nil {
		return err
	}
	return evolve.SaveVerdict(ctx, s, rec)
}
