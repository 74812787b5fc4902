package cli

import (
	"log/slog"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/plugin/dial"
)

// transportOptions returns the registry options that connect the wasm and
// process transports (dial.Options).
func transportOptions(logger *slog.Logger) []plugin.Option { return dial.Options(logger) }
