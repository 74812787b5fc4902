package cli

import (
	"strings"
	"time"

	"github.com/spf13/cobra"

	layer "github.com/sextant-dev/sextant/host/internal/app"
)

// temporalFlags are --temporal, --namespace and --task-queue: where run,
// resume, send, signal and worker find a Temporal cluster.
type temporalFlags struct {
	addr, namespace, queue string
	localSteps             bool
	queryTimeout           time.Duration
}

func (f *temporalFlags) add(c *cobra.Command, client bool) {
	help := "Temporal front end HOST:PORT"
	if client {
		help = "run on Temporal: the front end HOST:PORT (workers: sextant worker)"
	}
	c.Flags().StringVar(&f.addr, "temporal", "", help)
	c.Flags().StringVar(&f.namespace, "namespace", "default", "Temporal namespace (with --temporal)")
	c.Flags().StringVar(&f.queue, "task-queue", layer.DefaultTaskQueue, "Temporal task queue (with --temporal)")
	switch c.Name() {
	case "serve", "resume", "send", "signal", "cancel":
		c.Flags().DurationVar(&f.queryTimeout, "query-timeout", layer.DefaultQueryTimeout, "with --temporal: longest a worker may take to answer for a run going on; past it serve shows the run from Temporal's record, send and cancel leave theirs with Temporal and other changes are refused")
	}
	if strings.HasPrefix(c.Use, "run ") {
		c.Flags().BoolVar(&f.localSteps, "local-steps", false, "with --temporal: run steps inside the driving worker (fewer round trips; a running step does not move to another worker)")
	}
}
