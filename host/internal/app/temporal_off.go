//go:build notemporal

package app

import (
	"context"
	"errors"
)

// ErrNoTemporal is --temporal in a build without Temporal's SDK
// (-tags notemporal).
var ErrNoTemporal = &UsageError{errors.New("--temporal: this sextant was built without Temporal (-tags notemporal)")}

func openTemporal(context.Context, TemporalTarget, Options) (Backend, error) {
	return nil, ErrNoTemporal
}
