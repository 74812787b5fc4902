package report

import (
	"strings"
	"testing"
)

// liveReport is a passing gate of a candidate pipeline (a model-swap
// overlay) whose replay made calls live.
func liveReport() *Report {
	r := passingReport()
	r.CandidatePipeline = &CandidatePipeline{File: "candidates/gpt-4o.toml", Overlay: true,
		Digest: "9f2c4e1a7b3d5c6e8f0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6"}
	r.Live = &Live{Calls: 7, CostUSD: 0.01234, MaxCostUSD: 1, Recorded: true, Steps: []LiveStep{
		{Step: "classify", Call: "default gpt-4o", Calls: 6, CostUSD: 0.012, Tasks: []string{"task-006", "task-001", "task-002", "task-003", "task-004", "task-005"}},
		{Step: "", Call: "judge gpt-4o-mini", Calls: 1, CostUSD: 0.00034, Tasks: []string{"task-001"}},
	}}
	return r
}

// TestLiveInEveryFormat: the candidate pipeline's identity and the live
// calls' count, cost and steps are in every format but JUnit.
func TestLiveInEveryFormat(t *testing.T) {
	for _, f := range goldenFormats {
		if f.ext == "xml" {
			continue
		}
		got := string(render(t, f.write, liveReport()))
		for _, want := range []string{"candidates/gpt-4o.toml", "9f2c4e1a", "classify", "default gpt-4o", "judge gpt-4o-mini"} {
			if !strings.Contains(got, want) {
				t.Errorf("%s lacks %q", f.ext, want)
			}
		}
		if f.ext == "json" {
			for _, want := range []string{`"calls": 7`, `"cost_usd": 0.01234`, `"recorded": true`} {
				if !strings.Contains(got, want) {
					t.Errorf("json lacks %q", want)
				}
			}
			continue
		}
		if !strings.Contains(got, "7 calls made live (no recording), costing $0.0123 of max") {
			t.Errorf("%s lacks the live summary:\n%s", f.ext, got)
		}
	}
	// Without them, nothing is said.
	for _, f := range goldenFormats {
		if got := string(render(t, f.write, passingReport())); strings.Contains(got, "made live") || strings.Contains(got, "candidate_pipeline") {
			t.Errorf("%s of a strategy candidate mentions live calls", f.ext)
		}
	}
}
