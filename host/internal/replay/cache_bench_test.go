package replay

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// BenchmarkCacheKey is what the result cache adds per task-replay on a
// miss: the recorded task's digest, the key, and the digests of the
// recordings read (two here, as in the email-triage example).
func BenchmarkCacheKey(b *testing.B) {
	tree := &store.Tree{Task: store.Task{ID: "triage-0320", Pipeline: "email-triage",
		Input:  json.RawMessage(`{"body":"Please settle the attached invoice by wire transfer.","from":"sender27@example.com","subject":"Invoice 5189 overdue"}`),
		Truth:  json.RawMessage(`{"action":"flag_financial"}`),
		Tags:   []string{"difficulty=hard", "source=gen"},
		Status: store.StatusCompleted, Created: time.Date(2026, 3, 1, 10, 39, 59, 0, time.UTC),
		Strategy: store.StrategyRef{Name: "email-handler", Version: "2.0.0", Hash: "c4a71c0878124159ca41b3fc62c2031ee04198e5f5d1a9e26aa55b1bd440f39c"}},
		Executions: []store.ExecutionTree{{Execution: store.Execution{ID: "triage-0320-live", Mode: "live", Status: store.StatusCompleted,
			Trace: []string{"step classify", "call e3e3396a2a13", "step confirm"}}}}}
	rec := &store.Recording{Response: json.RawMessage(`{"text":"{\"action\": \"flag_financial\", \"confidence\": 0.55}","finish_reason":"stop"}`),
		Usage: sdk.Usage{InputTokens: 180, OutputTokens: 14}}
	fp := fmt.Sprintf("%x", sha256.Sum256([]byte("pipeline")))
	b.ReportAllocs()
	for b.Loop() {
		d := taskDigest(tree)
		sum := sha256.Sum256([]byte(fp + "\x00" + tree.Task.ID + "\x00" + d + "\x00" + tree.Task.Strategy.Hash + "\x00fail"))
		_ = sum
		_ = recordingDigest(rec)
		_ = recordingDigest(rec)
	}
}
