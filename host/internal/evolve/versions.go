package evolve

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
)

// ErrNothingProposed matches the error of a mutator that looked and found
// nothing worth proposing; errors.As gives the *NothingProposedError with
// its reason.
var ErrNothingProposed = errors.New("nothing proposed")

// NothingProposedError says why a mutator proposed no candidate.
type NothingProposedError struct {
	Mutator string
	Reason  string
}

func (e *NothingProposedError) Error() string { return e.Reason }

// Is makes errors.Is(err, ErrNothingProposed) hold.
func (e *NothingProposedError) Is(target error) bool { return target == ErrNothingProposed }

func nothingProposed(mutator, format string, args ...any) error {
	return &NothingProposedError{Mutator: mutator, Reason: fmt.Sprintf(format, args...)}
}

// TakenVersions returns the versions of the strategy name that are in use:
// recorded in st (promoted or approved), queued for review, archived as a
// losing candidate, or present as a strategy file in dir. st may be nil.
//
// A version names one strategy content for good, so a new candidate never
// takes one of these (see RATIONALE.md, "Why every candidate gets a version of its own").
func TakenVersions(ctx context.Context, st *store.Store, dir, name string) (map[string]bool, error) {
	taken := map[string]bool{}
	if st != nil {
		log, err := st.StrategyLog(ctx, name)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("taken versions of %s: %w", name, err)
		}
		for _, r := range log {
			taken[r.Version] = true
		}
		reviews, err := ListReviews(ctx, st, "")
		if err != nil {
			return nil, fmt.Errorf("taken versions of %s: %w", name, err)
		}
		for _, r := range reviews {
			if c, err := strategy.Parse("review "+r.ID, []byte(r.Candidate)); err == nil && c.Metadata.Name == name {
				taken[c.Metadata.Version] = true
			}
		}
		archived, err := ListArchived(ctx, st, name)
		if err != nil {
			return nil, fmt.Errorf("taken versions of %s: %w", name, err)
		}
		for _, a := range archived {
			taken[a.Version] = true
		}
	}
	if dir != "" {
		matches, _ := filepath.Glob(filepath.Join(dir, name+"-*.toml"))
		for _, m := range matches {
			if s, err := strategy.Load(m); err == nil && s.Metadata.Name == name {
				taken[s.Metadata.Version] = true
			}
		}
		if _, err := os.Stat(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("taken versions of %s: %w", name, err)
		}
	}
	return taken, nil
}

// nextFree returns the first minor bump of from that taken does not hold
// (2.0.0 → 2.1.0, or 2.2.0 when 2.1.0 is taken, …).
func nextFree(from string, taken func(string) bool) (string, error) {
	v := from
	for range 10000 {
		next, err := strategy.BumpMinor(v)
		if err != nil {
			return "", err
		}
		if !taken(next) {
			return next, nil
		}
		v = next
	}
	return "", fmt.Errorf("no free version after %s", from)
}
