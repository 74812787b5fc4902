package app

import (
	"context"
	"log/slog"

	"github.com/sextant-dev/sextant/host/internal/store"
)

// SalvageStore copies what reads whole of the store at from into a new
// store at to (store.Store.Salvage): the source opened read-only, the
// destination created. The caller checks that to is absent or empty.
func SalvageStore(ctx context.Context, from, to string, logger *slog.Logger, command string) (*store.SalvageReport, error) {
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
