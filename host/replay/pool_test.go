package replay_test

import (
	"context"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/sextant-dev/sextant/host/replay"
	"github.com/sextant-dev/sextant/host/run"
	"github.com/sextant-dev/sextant/host/strategy"
)

// TestPoolOpensOnce: replays that share a Pool (an evolution round's
// baseline and candidates) open one set of plugins per worker between
// them, not one per replay, and give the same results as replays that
// open their own.
func TestPoolOpensOnce(t *testing.T) {
	src := record(t, 12)
	base := load(t, "../../pipelines/email-triage/strategies/email-handler.toml")
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
