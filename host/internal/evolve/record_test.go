package evolve

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// TestVerdictRecord: a candidate's comparison is stored with its per-task
// outcomes and flips, listed newest first without the rows, and read back.
func TestVerdictRecord(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	b := baseline()
	c := candidate(b, t0, map[string]float64{"user_confirmation": 0.55})
	cmp := Compare(b, c, outcomes(3, 1, 1, 2), 1, Options{Seed: 1})
	ev := Evaluated{Mutator: "greedy", Strategy: c, Comparison: cmp, Result: Result{Ruling: sdk.Pass}}
	first, err := CandidateVerdict(ev, "email-triage", "01A", t0)
	if err != nil {
		t.Fatal(err)
	}
	if first.Command != "evolve" || len(first.Tasks) != 7 || first.Comparison.Regressed != 1 || first.Comparison.Improved != 2 {
		t.Fatalf("verdict %+v", first)
	}
	flips := map[string]int{}
	for _, tv := range first.Tasks {
		flips[tv.Flip]++
	}
	if flips[FlipRegressed] != 1 || flips[FlipImproved] != 2 || flips[""] != 4 {
		t.Fatalf("flips %v", flips)
	}
	second := *first
	second.ID, second.Created = "01B", t0.Add(1)
	for _, v := range []*Verdict{first, &second} {
		if err := SaveVerdict(ctx, st, v); err != nil {
			t.Fatal(err)
		}
	}
	list, err := ListVerdicts(ctx, st, "email-triage")
	if err != nil || len(list) != 2 || list[0].ID != "01B" || list[0].Tasks != nil {
		t.Fatalf("list %v %+v", err, list)
	}
	if other, _ := ListVerdicts(ctx, st, "other"); len(other) != 0 {
		t.Fatalf("other pipeline: %+v", other)
	}
	got, err := GetVerdict(ctx, st, "01A")
	if err != nil || len(got.Tasks) != 7 {
		t.Fatalf("get %v %+v", err, got)
	}
	if _, err := GetVerdict(ctx, st, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown verdict: %v", err)
	}
	if _, err := CandidateVerdict(Evaluated{}, "p", "x", t0); err == nil {
		t.Fatal("a candidate without a comparison was recorded")
	}
}

func TestClipOutput(t *testing.T) {
	if _, ok := ClipOutput(nil); ok {
		t.Fatal("nil output kept")
	}
	small, _ := ClipOutput(map[string]any{"a": "b"})
	if string(small) != `{"a":"b"}` {
		t.Fatalf("small: %s", small)
	}
	big := map[string]any{"text": string(make([]byte, 20000))}
	b, ok := ClipOutput(big)
	var s string
	if !ok || json.Unmarshal(b, &s) != nil || len(s) > maxOutput+4 {
		t.Fatalf("big output not clipped to a JSON string: %d bytes", len(b))
	}
}
