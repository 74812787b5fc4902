package evolve

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// TestSettleLive: an evolution's winner becomes live when its base still
// is, and the output says so; where the version is live is listed under
// its strategy; a winner whose base is no longer live is refused with the
// command that makes it live by hand.
func TestSettleLive(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	p := livePipeline(t)
	win := sibling(t, "2.1.0", "greedy", map[string]float64{"response_speed": 0.85}, false)
	if _, err := Promote(ctx, st, p.Dir+"/strategies", win, tPromote); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := SettleLive(ctx, &b, st, p, &Settlement{Winner: &win}, "1.0.0", tMove); err == nil || !strings.Contains(err.Error(), "(the version is recorded: sextant promote "+p.File+" 2.1.0 makes it live)") {
		t.Fatalf("a stale base: %v", err)
	}
	if err := SettleLive(ctx, &b, st, p, &Settlement{Winner: &win}, "2.0.0", tMove); err != nil {
		t.Fatal(err)
	}
	if want := "email-triage: email-handler 2.1.0 is live (was 2.0.0)\n"; b.String() != want {
		t.Fatalf("output %q, want %q", b.String(), want)
	}
	b.Reset()
	if err := WriteLiveIn(ctx, &b, st, "email-handler"); err != nil {
		t.Fatal(err)
	}
	if want := "live in email-triage: 2.1.0 (evolve by "; !strings.HasPrefix(b.String(), want) {
		t.Fatalf("live in: %q, want it to start %q", b.String(), want)
	}
}

// TestMoveUnrecorded: with no store only the configured version can be
// live, and it is already.
func TestMoveUnrecorded(t *testing.T) {
	p := livePipeline(t)
	var b strings.Builder
	if err := MoveUnrecorded(context.Background(), &b, p, "none/.sextant", Move{Action: MovePromote, Version: "2.0.0"}); err != nil || b.String() != "email-triage: email-handler 2.0.0 is live already\n" {
		t.Fatalf("the configured version: %q, %v", b.String(), err)
	}
	err := MoveUnrecorded(context.Background(), &b, p, "none/.sextant", Move{Action: MoveRollback, Version: "1.0.0"})
	want := "rollback email-triage: no store at none/.sextant, so nothing was promoted: only the configured email-handler 2.0.0 can be live"
	if !errors.Is(err, sdk.ErrInvalid) || err.Error() != want {
		t.Fatalf("another version: %v, want %q (invalid input)", err, want)
	}
}
