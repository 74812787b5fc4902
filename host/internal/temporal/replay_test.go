package temporal

import (
	"bytes"
	"compress/gzip"
	"reflect"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// TestReplayResultsRoundTrip: a shard's results reach the CLI as the
// worker had them (what the judge reads, floats included).
func TestReplayResultsRoundTrip(t *testing.T) {
	in := []replay.Result{
		{Task: "t1", Strategy: "2.0.0", Hash: "abc", Status: store.StatusCompleted, SelfReplay: true, Reproduced: true,
			Outcome: sdk.TaskResult{Success: true, Reward: 0.1 + 0.2, Confidence: 1, Steps: 3, Tokens: 172, CostUSD: 1e-7}},
		{Task: "t2", Strategy: "2.1.0", Hash: "def", Status: store.StatusFailed, Error: "boom", Misses: 2, Skipped: true,
			Divergence: &replay.Divergence{Index: 1, Node: "classify", Expected: "step classify", Got: "(end of trace)"}},
	}
	b, err := encodeReplayResults(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := decodeReplayResults(0, 2, b, maxReplayShardBytes)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Fatalf("decoded %+v\nencoded %+v", out, in)
	}
}

// TestReplayResultsBad: what a worker sends is input: anything but a
// shard's results is an error naming the shard (and the line), never a
// panic, and the decompressed size is bounded.
func TestReplayResultsBad(t *testing.T) {
	gz := func(s string) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write([]byte(s))
		zw.Close()
		return buf.Bytes()
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"not gzip", []byte(`{"task":"t","hash":"h"}`), "shard 2/3 results: gzip: invalid header"},
		{"truncated", gz(`{"task":"t","hash":"h"}` + "\n")[:20], "unexpected EOF"},
		{"not JSON", gz(`{"task":"t","hash":"h"}` + "\nnope\n"), "shard 2/3 results:2: invalid character"},
		{"unknown field", gz(`{"task":"t","hash":"h","nope":1}`), `shard 2/3 results:1: json: unknown field "nope"`},
		{"no task", gz(`{"hash":"h"}`), "shard 2/3 results:1: a result without a task"},
		{"too large", gz(strings.Repeat(`{"task":"t","hash":"h"}`+"\n", 100)), "shard 2/3 results: over 1000 bytes"},
	} {
		_, err := decodeReplayResults(1, 3, tc.data, 1000)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
