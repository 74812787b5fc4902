package report

import (
	"slices"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/store"
)

// TestTaskCompletions: only ids with the prefix, in order, each described
// by status and pipeline after a tab.
func TestTaskCompletions(t *testing.T) {
	tasks := []store.Task{
		{ID: "ab1", Pipeline: "triage", Status: store.StatusWaiting},
		{ID: "xy", Pipeline: "triage", Status: store.StatusCompleted},
		{ID: "ab2", Pipeline: "billing", Status: store.StatusFailed},
	}
	got := TaskCompletions(tasks, "ab")
	want := []string{"ab1\twaiting triage", "ab2\tfailed billing"}
	if !slices.Equal(got, want) {
		t.Fatalf("TaskCompletions = %q, want %q", got, want)
	}
	if got := TaskCompletions(tasks, "zz"); got != nil {
		t.Fatalf("no match: %q, want none", got)
	}
}
