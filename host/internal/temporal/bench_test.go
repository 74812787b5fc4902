package temporal_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/temporal"
)

// BenchmarkTemporal/run runs the 10-step chain of BenchmarkRun (5 scripted
// LLM calls, 5 expressions) start to end on a local dev server with two
// in-process workers, many runs at once, each recorded in the store when
// it ends. Every step is an activity and every navigator call a local
// activity, so the figure is bounded by the server's history writes
// (SQLite here), not by sextant.
func BenchmarkTemporal(b *testing.B) {
	for _, bc := range []struct {
		name  string
		local bool
	}{{"run", false}, {"run-local-steps", true}} {
		b.Run(bc.name, func(b *testing.B) { benchRun(b, bc.local) })
	}
}

func benchRun(b *testing.B, localSteps bool) {
	{
		const file = "../run/testdata/chain10/pipeline.toml"
		ctx := context.Background()
		cl := startCluster(b, nil, 2, file)
		var pipe string
		for name := range cl.preps {
			pipe = name
		}
		var n atomic.Int64
		b.SetParallelism(8)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				id := fmt.Sprintf("bench-%d", n.Add(1))
				cl.startWith(b, temporal.RunInput{Pipeline: pipe, Task: id, Input: map[string]any{"topic": id}, LocalSteps: localSteps})
				res, err := temporal.Result(ctx, cl.c, id)
				if err != nil || res.Status != store.StatusCompleted || res.Steps != 10 {
					b.Errorf("run %s: %v %+v", id, err, res)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
	}
}
