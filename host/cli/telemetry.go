package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/telemetry"
)

// telemetry starts live span export when --otlp-endpoint or
// $OTEL_EXPORTER_OTLP_ENDPOINT (or …_TRACES_ENDPOINT) names a collector;
// it returns nil (export off) otherwise. Prompt and response content is
// exported only with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true,
// read from st's recordings and redacted with its redactor.
func (a *app) telemetry(ctx context.Context, st *store.Store) (*telemetry.Exporter, error) {
	return telemetry.New(ctx, telemetry.Config{Endpoint: a.otlpEndpoint, Service: "sextant",
		Content: telemetry.CaptureContentFromEnv(), Recordings: st, Redactor: st.Redactor(), Logger: a.logger})
}

// shutdownTelemetry flushes what is queued (export failures are logged,
// never a command's failure).
func (a *app) shutdownTelemetry(ctx context.Context, exp *telemetry.Exporter) {
	if err := exp.Shutdown(context.WithoutCancel(ctx)); err != nil {
		a.logger.Warn("telemetry shutdown", "err", err)
	}
}

// addTelemetryFlag adds --otlp-endpoint to a command that runs or replays.
func (a *app) addTelemetryFlag(c *cobra.Command) {
	c.Flags().StringVar(&a.otlpEndpoint, "otlp-endpoint", "",
		"export spans live to this OTLP/HTTP endpoint, e.g. http://localhost:4318 (default $OTEL_EXPORTER_OTLP_ENDPOINT; unset: off)")
}
