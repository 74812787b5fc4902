package report

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/sextant-dev/sextant/host/internal/run"
)

// StepPrinter returns a run.Config.OnStep (sextant run --progress) that
// writes one line per step to w: node, kind, duration, tokens, status and
// the result clipped to one line.
func StepPrinter(w io.Writer) func(run.StepEvent) {
	var mu sync.Mutex // steps of one batch finish on their own goroutines
	return func(ev run.StepEvent) {
		mu.Lock()
		defer mu.Unlock()
		status := ""
		if ev.Status != run.StepOK {
			status = ev.Status + ": "
		}
		fmt.Fprintf(w, "  %-16s %-6s %8s %6d tok  %s%s\n", ev.Node, ev.Kind, ev.Duration.Round(time.Millisecond), ev.Tokens, status, Clip(ev.Result, 100))
	}
}
