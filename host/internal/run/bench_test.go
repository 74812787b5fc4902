package run_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	_ "github.com/sextant-dev/sextant/navigators/chain"
	"github.com/sextant-dev/sextant/sdk"
)

// builtinRegistry resolves the first-party builtins linked into the test.
func builtinRegistry(tb testing.TB) *plugin.Registry {
	tb.Helper()
	entries, err := plugin.Discover(nil, sdk.Registered())
	if err != nil {
		tb.Fatal(err)
	}
	return plugin.NewRegistry(entries)
}

func prepare(tb testing.TB, path string) *run.Prepared {
	tb.Helper()
	prep, err := run.Prepare(context.Background(), path, builtinRegistry(tb), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { prep.Close(context.Background()) })
	return prep
}

// BenchmarkRun/durable runs the 10-step chain (5 scripted LLM calls, 5
// expressions) start to end with a checkpoint committed after every step,
// many runs at once as a busy host would. Every commit survives kill -9;
// durable-fsync also fsyncs each checkpoint (shared between concurrent runs).
func BenchmarkRun(b *testing.B) {
	for _, bc := range []struct {
		name  string
		fsync bool
	}{{"durable", false}, {"durable-fsync", true}} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			prep := prepare(b, "testdata/chain10/pipeline.toml")
			st, err := store.Open(ctx, b.TempDir(), store.NewConfig().WithSyncCheckpoints(bc.fsync).
				WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			r := prep.Runner(run.Config{Store: st})
			var n atomic.Int64
			b.SetParallelism(8)
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					// A new topic each run: every LLM call reaches the
					// provider and is recorded, none is served from a recording.
					res, err := r.Start(ctx, run.Input{Input: map[string]any{"topic": fmt.Sprint(n.Add(1))}})
					if err != nil || res.Status != store.StatusCompleted || res.Steps != 10 {
						b.Errorf("run: %v %+v", err, res)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
			if cpu >= 0 {
				// The process's CPU time per run: what a busy machine
				// inflates far less than the wall time.
				b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
			}
		})
	}
}
