package evolve

import (
	"strings"
	"testing"
	"time"
)

func TestReviewText(t *testing.T) {
	var b strings.Builder
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	err := WriteReviews(&b, []ReviewRequest{{ID: "4b2e979dbf70", Status: ReviewPending, Pipeline: "email-triage",
		Baseline: StrategyID{Name: "email-handler", Version: "2.0.0"}, Mutator: "greedy", Created: at}})
	want := "ID            STATUS   PIPELINE      BASELINE             MUTATOR  CREATED\n" +
		"4b2e979dbf70  pending  email-triage  email-handler 2.0.0  greedy   2025-01-02T03:04:05Z\n"
	if err != nil || b.String() != want {
		t.Fatalf("WriteReviews: %v\n%s\nwant\n%s", err, b.String(), want)
	}
	b.Reset()
	WriteDecision(&b, &ReviewRequest{ID: "4b2e979dbf70", Status: ReviewApproved, Path: "strategies/x-2.1.0.toml"})
	if want := "4b2e979dbf70 approved → strategies/x-2.1.0.toml\n"; b.String() != want {
		t.Fatalf("WriteDecision: %q, want %q", b.String(), want)
	}
	next := (&StaleError{ID: "4b2e979dbf70"}).Next("my pipes/pipeline.toml", "ana")
	if want := "sextant gate 'my pipes/pipeline.toml' --candidate candidate.toml\n(or reject it: sextant review reject 4b2e979dbf70 --pipeline 'my pipes/pipeline.toml' --by ana)"; !strings.HasSuffix(next, want) {
		t.Fatalf("Next: %q, want it to end %q", next, want)
	}
}
