package temporal

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"

	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/temporal/temporaltest"
)

// noisyResults are n results whose task ids do not compress (about 19
// bytes each, compressed), the same for the same seed.
func noisyResults(seed uint64, n int) []replay.Result {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]replay.Result, n)
	for i := range out {
		out[i] = replay.Result{Task: fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64()), Hash: "h", Strategy: "1.0.0"}
	}
	return out
}

// TestReplayPayloads (real dev server): a replay whose results together
// are over Temporal's 2 MB payload limit comes back whole — each shard's
// results travel in its own workflow's result — and a shard over what one
// payload holds fails at once, saying how many shards would do, instead of
// leaving its workflow retrying a completion the server refuses.
func TestReplayPayloads(t *testing.T) {
	srv := temporaltest.Start(t)
	const perShard = 40000
	w := worker.New(srv.Dial(t), "payloads", worker.Options{})
	RegisterReplay(w, func(ctx context.Context, in ReplayShardInput) ([]replay.Result, error) {
		n := perShard
		if in.Seed == 1 { // the oversized replay
			n = 2 * perShard * in.Shards
		}
		return noisyResults(uint64(in.Shard), n), nil
	})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	o := ReplayClientOptions{HostPort: srv.HostPort, Namespace: srv.Namespace, TaskQueue: "payloads", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	// Not a timing: a bound on a hang (a workflow whose result the server
	// refuses retries for ever), to fail instead.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	b, err := encodeReplayResults(noisyResults(0, perShard))
	if err != nil {
		t.Fatal(err)
	}
	const shards = 4
	if len(b) < maxReplayShardPayload/2 || len(b) > maxReplayShardPayload || shards*len(b) < 2<<20 {
		t.Fatalf("a shard's results take %d bytes: want half of %d to %d, and %d shards over 2 MB", len(b), maxReplayShardPayload, maxReplayShardPayload, shards)
	}
	got, err := RunReplay(ctx, o, ReplayInput{Shards: shards})
	if err != nil {
		t.Fatalf("a replay of %d bytes of results in %d shards: %v", shards*len(b), shards, err)
	}
	for i, rs := range got {
		want := noisyResults(uint64(i), perShard)
		if !reflect.DeepEqual(rs, want) {
			t.Fatalf("shard %d: %d results, want %d", i+1, len(rs), len(want))
		}
	}

	_, err = RunReplay(ctx, o, ReplayInput{Shards: 2, Seed: 1})
	if !IsReplayInvalid(err) || !strings.Contains(err.Error(), "fan out over more shards (--temporal-shards ") {
		t.Fatalf("a shard over the payload limit: %v", err)
	}
}
