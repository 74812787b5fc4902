package evolve

import (
	"bytes"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
)

// TestLiveText: strategy live's text, a move's line and the note when a
// pinned pipeline's runs keep another version.
func TestLiveText(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	p := &pipeline.Pipeline{Name: "triage", File: "triage/pipeline.toml"}
	v1 := LiveVersion{Name: "s", Version: "1.0.0", Hash: "0123456789abcdef", File: "strategy.toml", Action: MoveConfigured}
	v2 := LiveVersion{Name: "s", Version: "2.0.0", Hash: "fedcba9876543210", File: "s-2.0.0.toml", Action: MovePromote, By: "ann@box", Reason: "canary", At: at, From: "1.0.0"}
	before := &Live{Pipeline: "triage", Live: v1, Configured: v1, Runs: v1}
	after := &Live{Pipeline: "triage", Live: v2, Configured: v1, Runs: v1, Pinned: true, History: []LiveVersion{v2}}
	var b bytes.Buffer
	if err := after.WriteText(&b, p); err != nil {
		t.Fatal(err)
	}
	want := `triage: s 2.0.0 is live (s-2.0.0.toml, hash fedcba987654)
since 2026-01-02T03:04:05Z: promote by ann@box: canary
note: triage/pipeline.toml pins its strategy ([strategy] pin = true): runs keep using s 1.0.0 until the pin is removed

AT                    ACTION   VERSION  FROM   BY       REASON
2026-01-02T03:04:05Z  promote  2.0.0    1.0.0  ann@box  canary
`
	if b.String() != want {
		t.Errorf("live:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	after.Pinned = false
	after.WriteMoved(&b, before, p)
	want = "triage: s 2.0.0 is live (was 1.0.0; promote by ann@box)\nnote: triage/pipeline.toml now configures strategy s, so runs use it, not the live s 2.0.0\n"
	if b.String() != want {
		t.Errorf("moved:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	before.WriteMoved(&b, before, p)
	if want := "triage: s 1.0.0 is live already\n"; b.String() != want {
		t.Errorf("no move: %q, want %q", b.String(), want)
	}
}
