package temporal

import (
	"log/slog"

	"go.temporal.io/sdk/log"
)

// quietLogger routes the SDK's chatter to slog at debug level, warnings
// and errors at their own.
type quietLogger struct{}

var _ log.Logger = quietLogger{}

func (quietLogger) Debug(msg string, kv ...any) { slog.Debug("temporal: "+msg, kv...) }
func (quietLogger) Info(msg string, kv ...any)  { slog.Debug("temporal: "+msg, kv...) }
func (quietLogger) Warn(msg string, kv ...any)  { slog.Warn("temporal: "+msg, kv...) }
func (quietLogger) Error(msg string, kv ...any) { slog.Error("temporal: "+msg, kv...) }
