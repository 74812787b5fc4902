package cli

import (
	"os"

	"github.com/spf13/cobra"
)

// The defaults of replay --temporal's namespace and task queue: those of
// `sextant worker`, whose workers run the shards.
const (
	replayDefaultNamespace = "default"
	replayDefaultTaskQueue = "sextant"
	replayDefaultShards    = 8
)

// replayTemporalFlags are replay's --temporal flags.
type replayTemporalFlags struct {
	hostPort, namespace, taskQueue string
	shards                         int
}

func (f *replayTemporalFlags) add(c *cobra.Command) {
	c.Flags().StringVar(&f.hostPort, "temporal", "", "HOST:PORT of a Temporal front end: fan the replay out as activities over the sextant workers polling --task-queue, and judge here")
	c.Flags().StringVar(&f.namespace, "namespace", replayDefaultNamespace, "Temporal namespace (with --temporal)")
	c.Flags().StringVar(&f.taskQueue, "task-queue", replayDefaultTaskQueue, "Temporal task queue (with --temporal)")
	c.Flags().IntVar(&f.shards, "temporal-shards", replayDefaultShards, "number of shard activities a replay fans out to (with --temporal)")
}

// warnTemporalSpans says that a replay on Temporal exports no spans
// when the environment asks for them.
func (a *app) warnTemporalSpans(f *replayFlags) {
	if f.temporal.hostPort != "" && os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" {
		a.logger.Warn("a replay on Temporal exports no spans (its workers replay): OTEL_EXPORTER_OTLP_ENDPOINT is not used")
	}
}
