package replay_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/plugin/wasm"
	"github.com/sextant-dev/sextant/host/internal/plugintest"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	_ "github.com/sextant-dev/sextant/navigators/chain"
	"github.com/sextant-dev/sextant/sdk"
)

const chain10 = "../run/testdata/chain10/pipeline.toml"

// BenchmarkReplay replays the 10-step chain (5 recorded LLM calls, 5
// expressions) with 4 workers: builtin navigator, and the same navigator as
// a wasm module (one instance per worker).
func BenchmarkReplay(b *testing.B) {
	ctx := context.Background()
	builtins, err := plugin.Discover(nil, sdk.Registered())
	if err != nil {
		b.Fatal(err)
	}
	src, err := store.Open(ctx, b.TempDir(), store.NewConfig().WithSyncCheckpoints(false).WithLogger(quiet))
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	const tasks = 1000 // a replay opens its plugins once: amortise that as a real replay does
	prep, err := run.Prepare(ctx, chain10, plugin.NewRegistry(builtins), quiet)
	if err != nil {
		b.Fatal(err)
	}
	r := prep.Runner(run.Config{Store: src, Logger: quiet})
	for i := 0; i < tasks; i++ {
		if res, err := r.Start(ctx, run.Input{ID: fmt.Sprintf("t%04d", i), Input: map[string]any{"topic": fmt.Sprint(i)}}); err != nil || res.Status != store.StatusCompleted {
			b.Fatalf("record: %v %+v", err, res)
		}
	}
	prep.Close(ctx)
	st, err := strategy.Load("../run/testdata/chain10/strategy.toml")
	if err != nil {
		b.Fatal(err)
	}
	bench := func(b *testing.B, reg *plugin.Registry, cache replay.Cache) {
		// As sextant replay does: the pipeline, strategy and routine are
		// loaded and validated once; each worker opens its own plugins.
		loaded, err := run.Load(ctx, chain10, reg, quiet)
		if err != nil {
			b.Fatal(err)
		}
		defer loaded.Close(ctx)
		cfg := replay.Config{Source: src, Pipeline: "chain10", Strategies: []*strategy.Strategy{st}, Workers: 4, Logger: quiet,
			Prepare: func(ctx context.Context) (*run.Prepared, error) { return loaded.Open(ctx) }}
		if cache != nil {
			cfg.Cache, cfg.Plugins, cfg.Version = cache, reg, "bench"
			// Fill the cache outside the timer: the runs below are all hits.
			if err := replay.Run(ctx, cfg, func(replay.Result) error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
		// Warm up outside the timer: the first open of a wasm plugin
		// compiles it (then it comes from the disk cache).
		if prep, err := cfg.Prepare(ctx); err != nil {
			b.Fatal(err)
		} else {
			prep.Close(ctx)
		}
		b.ReportAllocs()
		b.ResetTimer()
		cpu := cpuTime()
		done := 0
		for done < b.N {
			err := replay.Run(ctx, cfg, func(r replay.Result) error {
				if !r.Reproduced {
					return fmt.Errorf("task %s not reproduced: %+v", r.Task, r.Divergence)
				}
				done++
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(done)/b.Elapsed().Seconds(), "task-replays/s")
		if cpu >= 0 {
			// The process's CPU time per task replay: what a busy machine
			// inflates far less than the wall time. Its inverse is the rate
			// one core would sustain.
			b.ReportMetric(float64(cpuTime()-cpu)/float64(done), "cpu-ns/task")
		}
	}
	b.Run("builtin", func(b *testing.B) { bench(b, plugin.NewRegistry(builtins), nil) })
	// builtin-warm-cache serves every task from a filled result cache: the
	// cost of the key (task digest, recordings re-checked) and of a read.
	b.Run("builtin-warm-cache", func(b *testing.B) {
		cache, err := replay.OpenDirCache(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		bench(b, plugin.NewRegistry(builtins), cache)
	})
	b.Run("wasm-navigator", func(b *testing.B) {
		dir := b.TempDir()
		mod := plugintest.Wasm(b, "navigators/chain/plugin")
		pd := filepath.Join(dir, "chain")
		os.MkdirAll(pd, 0o755)
		data, _ := os.ReadFile(mod)
		os.WriteFile(filepath.Join(pd, "chain.wasm"), data, 0o644)
		os.WriteFile(filepath.Join(pd, "plugin.toml"), []byte("name = \"chain\"\nkind = \"navigator\"\nversion = \"0.1.0\"\napi = 1\n[wasm]\nfile = \"chain.wasm\"\n"), 0o644)
		entries, err := plugin.Discover([]string{dir}, sdk.Registered())
		if err != nil {
			b.Fatal(err)
		}
		cache := filepath.Join(dir, "cache")
		reg := plugin.NewRegistry(entries, plugin.WithLogger(quiet), plugin.WithDialer(plugin.TransportWasm,
			func(ctx context.Context, m *plugin.Manifest, g plugin.Grant) (plugin.Conn, error) {
				return wasm.Open(ctx, wasm.Config{Name: m.Name, Path: m.ArtifactPath(), CacheDir: cache, Logger: quiet})
			}))
		bench(b, reg, nil)
	})
}
