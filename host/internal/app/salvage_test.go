package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// TestSalvageStore: a whole store's task reaches the new store, which a
// later open finds; a missing source is invalid input that creates
// nothing at to; an unnamed or used to is refused.
func TestSalvageStore(t *testing.T) {
	f := newFixture(t)
	b := open(t, Target{Store: f.store, Create: true})
	f.start(t, b, "t1")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	to := filepath.Join(t.TempDir(), "salvaged")
	rep, err := SalvageStore(ctx, f.store, to, quiet(), "sextant test")
	if err != nil || rep.Copied.Tasks != 1 || len(rep.Left) != 0 {
		t.Fatalf("salvage: %v %+v", err, rep)
	}
	s, err := OpenStore(ctx, to, Read, nil, quiet(), "sextant test")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Task(ctx, "t1"); err != nil {
		t.Fatalf("the salvaged store lacks t1: %v", err)
	}

	other := filepath.Join(t.TempDir(), "other")
	if _, err := SalvageStore(ctx, filepath.Join(t.TempDir(), "missing"), other, quiet(), "sextant test"); !errors.Is(err, sdk.ErrInvalid) {
		t.Fatalf("salvage a missing store: %v, want invalid input", err)
	}
	if _, err := os.Stat(other); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused salvage created %s: %v", other, err)
	}

	// salvage writes only a new store: an unnamed or non-empty --to is a
	// usage error.
	for _, bad := range []string{"", to} {
		var ue *UsageError
		if _, err := SalvageStore(ctx, f.store, bad, quiet(), "sextant test"); !errors.As(err, &ue) {
			t.Fatalf("salvage into %q: %v, want a usage error", bad, err)
		}
	}
}
