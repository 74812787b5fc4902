package app

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/sextant-dev/sextant/host/internal/evolve"
)

// DecideOn takes req's decision on b and says on w what it did. An
// approved candidate whose parent is no longer live is invalid input
// (exit 2) followed by the commands that judge it again.
func DecideOn(ctx context.Context, w io.Writer, b Backend, req DecideRequest) error {
	d, err := b.Decide(ctx, req)
	var se *evolve.StaleError
	if errors.As(err, &se) {
		return invalid(fmt.Errorf("%w\n%s", err, se.Next(req.Pipeline.File, req.By)))
	}
	if err != nil {
		return err
	}
	if l := d.Live; l != nil {
		fmt.Fprintf(w, "%s: %s %s is live (was %s)\n", req.Pipeline.Name, l.Live.Name, l.Live.Version, l.Live.From)
		l.WritePinned(w, req.Pipeline)
	}
	evolve.WriteDecision(w, d.Review)
	return nil
}
