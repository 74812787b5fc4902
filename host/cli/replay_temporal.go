package cli

import (
	"errors"
	"fmt"
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

// checkReplayTemporal checks the flags of replay --temporal.
func (a *app) checkReplayTemporal(f *replayFlags) error {
	if f.shard != "" || f.shardTotal != 0 || f.results != "" {
		return usageErr(errors.New("--temporal shards the replay itself: --shard and --results are for CI shards that sextant merge judges"))
	}
	if a.otlpEndpoint != "" {
		return usageErr(errors.New("--otlp-endpoint with --temporal: the workers replay, and do not export spans; export from a local replay"))
	}
	if f.temporal.shards < 1 {
		return usageErr(fmt.Errorf("--temporal-shards %d: want at least 1", f.temporal.shards))
	}
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" {
		a.logger.Warn("a replay on Temporal exports no spans (its workers replay): OTEL_EXPORTER_OTLP_ENDPOINT is not used")
	}
	return nil
}
