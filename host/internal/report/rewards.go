package report

import (
	"fmt"
	"io"

	"github.com/sextant-dev/sextant/host/internal/store"
)

// WriteRewards writes the rewards sextant feedback recorded, one a line.
func WriteRewards(w io.Writer, rs []*store.Reward) {
	for _, r := range rs {
		if r.Dimension != "" {
			fmt.Fprintf(w, "reward #%d %s %+g on task %s\n", r.Seq, r.Dimension, r.Value, r.Task)
			continue
		}
		fmt.Fprintf(w, "reward #%d %+g on task %s\n", r.Seq, r.Value, r.Task)
	}
}

// WriteImported writes what sextant import read into the store.
func WriteImported(w io.Writer, n store.Counts) {
	fmt.Fprintf(w, "imported %d tasks, %d executions, %d spans, %d rewards, %d recordings, %d checkpoints\n",
		n.Tasks, n.Executions, n.Spans, n.Rewards, n.Recordings, n.Checkpoints)
}
