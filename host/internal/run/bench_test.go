package run_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
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
// The bpmn-* rows run BPMN processes one instance at a time (benchmarkBPMN).
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
			// Measured through to the data in Badger: the journal's
			// applier (host/internal/store) finishes inside the timing.
			if err := st.Sync(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
			if cpu >= 0 {
				// The process's CPU time per run: what a busy machine
				// inflates far less than the wall time.
				b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
			}
		})
	}
	b.Run("large-input", benchmarkLargeInput)
	for _, p := range []string{"linear10", "exclusive", "parallel4"} {
		b.Run("bpmn-"+p, func(b *testing.B) { benchmarkBPMN(b, p) })
	}
}

// benchmarkLargeInput is BenchmarkRun/large-input: one run of a 6-step
// chain (3 scripted LLM calls, 3 expressions) over a 16 MiB input, half a
// long body of text (ordinary words, some of which the redactor looks
// for, like "token" and "password"), half 100 000 small records. It
// reports what one run adds to the store, as a multiple of the input's
// size (store-x), measured on the closed store's files.
func benchmarkLargeInput(b *testing.B) {
	ctx := context.Background()
	prep := prepare(b, "testdata/large6/pipeline.toml")
	input := largeInput(16 << 20)
	size := jsonSize(b, input)
	dir := b.TempDir()
	open := func() *store.Store {
		st, err := store.Open(ctx, dir, store.NewConfig().WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
		if err != nil {
			b.Fatal(err)
		}
		return st
	}
	st := open()
	st.Close()
	before := dirSize(b, dir)
	st = open()
	r := prep.Runner(run.Config{Store: st})
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		res, err := r.Start(ctx, run.Input{Input: input})
		if err != nil || res.Status != store.StatusCompleted || res.Steps != 6 {
			b.Fatalf("run: %v %+v", err, res)
		}
	}
	b.StopTimer()
	if cpu >= 0 {
		b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(dirSize(b, dir)-before)/float64(b.N)/float64(size), "store-x")
	b.ReportMetric(float64(size)/(1<<20), "input-MiB")
}

// largeInput is an input of about n bytes as JSON: a subject, a body of
// text and records, each half of the rest.
func largeInput(n int) map[string]any {
	words := strings.Fields(`the customer says their auth token expired after the password reset and ` +
		`the api key in the settings page no longer works so please check the billing account ` +
		`and send a new invoice with the secret question removed before the cookie banner shows`)
	var body strings.Builder
	for i := 0; body.Len() < n/2; i++ {
		body.WriteString(words[(i*7)%len(words)])
		if i%13 == 12 {
			body.WriteString(".\n")
		} else {
			body.WriteByte(' ')
		}
	}
	var records []any
	for i, size := 0, 0; size < n/2; i++ {
		rec := map[string]any{"id": float64(i), "name": fmt.Sprintf("item %d", i), "price": float64(i%1000) + 0.5, "tags": []any{"a", "b"}}
		records = append(records, rec)
		size += 64
	}
	return map[string]any{"subject": "Cannot log in", "body": body.String(), "records": records}
}

func jsonSize(tb testing.TB, v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return len(b)
}

// dirSize is the size of the files in dir.
func dirSize(tb testing.TB, dir string) int64 {
	entries, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var n int64
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			tb.Fatal(err)
		}
		n += info.Size()
	}
	return n
}
