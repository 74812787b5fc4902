//go:build notemporal

package cli

import (
	"github.com/spf13/cobra"

	layer "github.com/sextant-dev/sextant/host/internal/app"
)

// Built with -tags notemporal: Temporal's SDK is not linked, and the
// commands that need it say so (layer.ErrNoTemporal).

func (a *app) workerCommand() *cobra.Command {
	return &cobra.Command{Use: "worker", Short: "Run pipelines for a Temporal cluster (not in this build)", Hidden: true,
		RunE: func(*cobra.Command, []string) error { return layer.ErrNoTemporal }}
}
