package cli

import (
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// defaultTaskQueue is temporal.DefaultTaskQueue, spelt out so that this
// file builds without Temporal's SDK (-tags notemporal).
const defaultTaskQueue = "sextant"

// temporalFlags are --temporal, --namespace and --task-queue: where run,
// resume, send, signal and worker find a Temporal cluster.
type temporalFlags struct {
	addr, namespace, queue string
	localSteps             bool
	queryTimeout           time.Duration // serve's --query-timeout
}

func (f *temporalFlags) add(c *cobra.Command, client bool) {
	help := "Temporal front end HOST:PORT"
	if client {
		help = "run on Temporal: the front end HOST:PORT (workers: sextant worker)"
	}
	c.Flags().StringVar(&f.addr, "temporal", "", help)
	c.Flags().StringVar(&f.namespace, "namespace", "default", "Temporal namespace (with --temporal)")
	c.Flags().StringVar(&f.queue, "task-queue", defaultTaskQueue, "Temporal task queue (with --temporal)")
	if strings.HasPrefix(c.Use, "run ") {
		c.Flags().BoolVar(&f.localSteps, "local-steps", false, "with --temporal: run steps inside the driving worker (fewer round trips; a running step does not move to another worker)")
	}
}
