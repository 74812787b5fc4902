package evolve

import (
	"context"
	"strings"
	"testing"
)

// TestWriteStrategyLog: a strategy with no promoted version says so; one
// with versions lists them, then where one is live.
func TestWriteStrategyLog(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	p := livePipeline(t)
	var b strings.Builder
	if err := WriteStrategyLog(ctx, &b, st, "email-handler", nil); err != nil || b.String() != "no promoted versions of email-handler recorded\n" {
		t.Fatalf("none: %q %v", b.String(), err)
	}
	win := sibling(t, "2.1.0", "greedy", map[string]float64{"response_speed": 0.85}, false)
	if _, err := Promote(ctx, st, p.Dir+"/strategies", win, tPromote); err != nil {
		t.Fatal(err)
	}
	if err := SettleLive(ctx, &strings.Builder{}, st, p, &Settlement{Winner: &win}, "2.0.0", tMove); err != nil {
		t.Fatal(err)
	}
	recs, err := st.StrategyLog(ctx, "email-handler")
	if err != nil || len(recs) == 0 {
		t.Fatalf("log: %v %v", recs, err)
	}
	b.Reset()
	if err := WriteStrategyLog(ctx, &b, st, "email-handler", recs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if !strings.HasPrefix(lines[0], "VERSION") || !strings.Contains(b.String(), "2.1.0") ||
		!strings.HasPrefix(lines[len(lines)-1], "live in email-triage: 2.1.0 (") {
		t.Errorf("got\n%s", b.String())
	}
}
