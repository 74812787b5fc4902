package cli

import (
	"log/slog"

	"github.com/sextant-dev/sextant/host/plugin"
)

// transportOptions returns the registry options that connect the wasm and
// process transports.
func transportOptions(logger *slog.Logger) []plugin.Option {
	return nil
}
