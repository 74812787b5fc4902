//go:build notemporal

package app

import (
	"context"
	"errors"

	"github.com/sextant-dev/sextant/host/internal/serve"
)

// ErrNoTemporal is --temporal in a build without Temporal's SDK
// (-tags notemporal).
var ErrNoTemporal = &UsageError{errors.New("--temporal: this sextant was built without Temporal (-tags notemporal)")}

// ServeCluster is sextant serve's --temporal, which this build lacks.
func ServeCluster(t TemporalTarget, _ Options) func(context.Context) (serve.Cluster, error) {
	if t.Addr == "" {
		return nil
	}
	return func(context.Context) (serve.Cluster, error) { return nil, ErrNoTemporal }
}

func openTemporal(context.Context, TemporalTarget, Options) (Backend, error) {
	return nil, ErrNoTemporal
}
