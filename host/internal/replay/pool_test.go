package replay_test

import (
	"context"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

// TestPoolOpensOnce: replays that share a Pool (an evolution round's
// baseline and candidates) open one set of plugins per worker between
// them, not one per replay, and give the same results as replays that
// open their own.
func TestPoolOpensOnce(t *testing.T) {
	src := record(t, 12)
	base := load(t, "../../../pipelines/email-triage/strategies/email-handler.toml")
	cand := base.Clone()
	cand.Metadata.Version = "9.9.9"
	var opens atomic.Int32
	counting := func(ctx context.Context) (*run.Prepared, error) {
		opens.Add(1)
		return prepare(ctx)
	}
	cfg := replay.Config{Prepare: counting, Source: src, Pipeline: "email-triage", Workers: 3, Logger: quiet}
	var want [][]replay.Result
	for _, sts := range [][]*strategy.Strategy{{base}, {base, cand}, {base, cand}} {
		c := cfg
		c.Strategies = sts
		want = append(want, replayAll(t, c))
	}
	if n := opens.Load(); n != 9 {
		t.Fatalf("3 replays without a pool opened %d times, want 9", n)
	}
	opens.Store(0)
	pool := replay.NewPool(counting)
	for i, sts := range [][]*strategy.Strategy{{base}, {base, cand}, {base, cand}} {
		c := cfg
		c.Strategies, c.Pool = sts, pool
		if got := replayAll(t, c); !reflect.DeepEqual(got, want[i]) {
			t.Fatalf("replay %d over the pool differs:\n got  %+v\n want %+v", i, got, want[i])
		}
	}
	pool.Close(context.Background())
	if n := opens.Load(); n != 3 {
		t.Fatalf("3 replays over one pool opened %d times, want 3 (one per worker)", n)
	}
}

// down is a live provider that is always unavailable; it counts calls.
type down struct{ calls *atomic.Int32 }

func (down) Describe() sdk.Info {
	return sdk.Info{Name: "down", Kind: sdk.KindProvider, Version: "1.0.0", API: sdk.APIVersion}
}

func (d down) Chat(context.Context, *sdk.ChatRequest) (*sdk.ChatResponse, error) {
	d.calls.Add(1)
	return nil, &sdk.Error{Code: sdk.CodeUnavailable, Message: "down"}
}

// TestPoolFreshBreakers: under on_miss = live a replay's misses reach the
// live provider; one failure opens its circuit (breaker of 1) for the
// rest of that replay, but the next replay over the same pooled plugins
// starts with a closed circuit, as it would with plugins of its own.
func TestPoolFreshBreakers(t *testing.T) {
	ctx := context.Background()
	builtins, err := plugin.Discover(nil, sdk.Registered())
	if err != nil {
		t.Fatal(err)
	}
	reg := plugin.NewRegistry(builtins)
	src, err := store.Open(ctx, t.TempDir(), store.NewConfig().WithSyncCheckpoints(false).WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	rec, err := run.Prepare(ctx, chain10, reg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if res, err := rec.Runner(run.Config{Store: src, Logger: quiet}).Start(ctx, run.Input{ID: fmt.Sprint("t", i), Input: map[string]any{"topic": fmt.Sprint(i)}}); err != nil || res.Status != store.StatusCompleted {
			t.Fatalf("record: %v %+v", err, res)
		}
	}
	rec.Close(ctx)
	var calls atomic.Int32
	pool := replay.NewPool(func(ctx context.Context) (*run.Prepared, error) {
		prep, err := run.Prepare(ctx, chain10, reg, quiet)
		if err != nil {
			return nil, err
		}
		// Another model: no call has a recording, each goes live.
		prep.Providers = prep.Providers.Map(func(p *run.Provider) *run.Provider {
			c := *p
			c.Plugin, c.Model, c.Retries, c.Fallback = down{&calls}, "another-model", 0, nil
			c.Breaker = run.Breaker{Failures: 1, Cooldown: time.Hour}
			return &c
		})
		return prep, nil
	})
	defer pool.Close(ctx)
	st, err := strategy.Load("../run/testdata/chain10/strategy.toml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := replay.Config{Pool: pool, Source: src, Pipeline: "chain10", Strategies: []*strategy.Strategy{st}, Workers: 1, OnMiss: replay.MissLive, Logger: quiet}
	for i := 1; i <= 2; i++ {
		for _, r := range replayAll(t, cfg) {
			if r.Status == store.StatusCompleted {
				t.Fatalf("replay %d: task %s completed against a provider that is down", i, r.Task)
			}
		}
		if n := calls.Load(); n != int32(i) {
			t.Fatalf("after replay %d the live provider was called %d times, want %d (once per replay; then the circuit is open)", i, n, i)
		}
	}
}
