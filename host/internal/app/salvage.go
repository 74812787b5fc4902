package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/sextant-dev/sextant/host/internal/store"
)

// SalvageStore copies what reads whole of the store at from into a new
// store at to (store.Store.Salvage): the source opened read-only, the
// destination created. A to that is unnamed or not empty is a
// *UsageError: salvage writes only a new store.
func SalvageStore(ctx context.Context, from, to string, logger *slog.Logger, command string) (*store.SalvageReport, error) {
	if to == "" {
		return nil, &UsageError{errors.New("--to: name the new store's directory")}
	}
	if entries, err := os.ReadDir(to); err == nil && len(entries) > 0 {
		return nil, &UsageError{fmt.Errorf("--to: %s is not empty (salvage writes a new store)", to)}
	}
	src, err := OpenStore(ctx, from, Read, nil, logger, command)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	dst, err := OpenStore(ctx, to, Create, nil, logger, command)
	if err != nil {
		return nil, err
	}
	rep, err := src.Salvage(ctx, dst)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return rep, nil
}
