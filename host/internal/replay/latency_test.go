package replay_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
)

// TestReplayLatency checks that a replay's latency is the recorded
// latency of the calls it answered from recordings (the replay's own
// clock stands still, so nothing else could give it one), and that it
// carries its output's digest.
func TestReplayLatency(t *testing.T) {
	ctx := context.Background()
	src := record(t, 1)
	var buf strings.Builder
	if _, err := src.Export(ctx, &buf, store.ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, line := range strings.Split(buf.String(), "\n") {
		var rec struct{ Type, Hash, Kind string }
		json.Unmarshal([]byte(line), &rec)
		if rec.Type != "recording" || rec.Kind != "chat" {
			continue
		}
		r, err := src.Recording(ctx, rec.Hash)
		if err != nil {
			t.Fatal(err)
		}
		r.Latency = 1500 * time.Millisecond
		if err := src.PutRecording(ctx, r); err != nil {
			t.Fatal(err)
		}
		calls++
	}
	if calls == 0 {
		t.Fatal("the recorded task made no model call")
	}
	base := load(t, "../../../pipelines/email-triage/strategies/email-handler.toml")
	res := replayAll(t, replay.Config{Prepare: prepare, Source: src, Pipeline: "email-triage",
		Strategies: []*strategy.Strategy{base}, Workers: 1, Logger: quiet})
	if len(res) != 1 || !res[0].Reproduced {
		t.Fatalf("results %+v", res)
	}
	if want := 1500.0 * float64(calls); res[0].LatencyMS != want {
		t.Fatalf("latency %v ms, want %v (%d calls of 1.5 s)", res[0].LatencyMS, want, calls)
	}
	if res[0].Output == nil || res[0].OutputDigest != replay.OutputDigest(res[0].Output) || len(res[0].OutputDigest) != 16 {
		t.Fatalf("output %v, digest %q", res[0].Output, res[0].OutputDigest)
	}
}
