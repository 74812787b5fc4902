package evolve

import (
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
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

// TestTableTabs: a tab or newline in a review's mutator or pipeline, or in
// a move's reason, is shown escaped (\t, \n), once, and the columns after
// it stay in place: each row is one line.
func TestTableTabs(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	var b strings.Builder
	err := WriteReviews(&b, []ReviewRequest{{ID: "id", Status: ReviewPending, Pipeline: "p\tq", Baseline: StrategyID{Name: "s", Version: "1"},
		Mutator: "m\nn\x1b", Created: at}})
	want := "ID  STATUS   PIPELINE  BASELINE  MUTATOR   CREATED\n" +
		`id  pending  p\tq      s 1       m\nn\x1b  2025-01-02T03:04:05Z` + "\n"
	if err != nil || b.String() != want {
		t.Fatalf("WriteReviews: %v\n%s\nwant\n%s", err, b.String(), want)
	}
	b.Reset()
	v := LiveVersion{Name: "s", Version: "2.0.0", Action: MovePromote, By: "ann\tbob", Reason: "a\tb\nc", At: at, From: "1.0.0"}
	l := &Live{Pipeline: "triage", Live: v, Configured: v, Runs: v, History: []LiveVersion{v}}
	if err := l.WriteText(&b, &pipeline.Pipeline{Name: "triage", File: "pipeline.toml"}); err != nil {
		t.Fatal(err)
	}
	if want := "2025-01-02T03:04:05Z  promote  2.0.0    1.0.0  ann\\tbob  a\\tb\\nc\n"; !strings.HasSuffix(b.String(), want) {
		t.Fatalf("Live.WriteText's history:\n%s\nwant it to end\n%s", b.String(), want)
	}
}
