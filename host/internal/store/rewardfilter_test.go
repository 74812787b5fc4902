package store

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestTasksRewarded: --min-reward keeps the tasks whose mean reward on
// the dimension is at least the bound, after the query's own Match; a
// task without such rewards is left out.
func TestTasksRewarded(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	for _, id := range []string{"good", "bad", "none", "safe"} {
		seed(t, s, id, 0)
	}
	must(t, s.AddRewards(ctx, []*Reward{{Task: "good", Value: 1}, {Task: "good", Value: 0}, {Task: "bad", Value: -1},
		{Task: "safe", Dimension: "safety", Value: 0.9}, {Task: "bad", Dimension: "safety", Value: 0.2}}))
	ids := func(tasks []Task) string {
		var out []string
		for _, t := range tasks {
			out = append(out, t.ID)
		}
		return strings.Join(out, ",")
	}
	for _, tt := range []struct {
		bound string
		match func(*Task) bool
		want  string
	}{
		{"", nil, "bad,good,none,safe"},
		{"0.5", nil, "good"},
		{"-1", nil, "bad,good"},
		{"safety=0.5", nil, "safe"},
		{"safety=-1", func(t *Task) bool { return t.ID != "safe" }, "bad"},
	} {
		b, err := ParseRewardBound(tt.bound)
		must(t, err)
		tasks, err := s.TasksRewarded(ctx, Query{Match: tt.match}, b)
		must(t, err)
		var sorted []Task
		for _, want := range strings.Split("bad,good,none,safe", ",") {
			for _, task := range tasks {
				if task.ID == want {
					sorted = append(sorted, task)
				}
			}
		}
		if got := ids(sorted); got != tt.want || len(tasks) != len(sorted) {
			t.Errorf("--min-reward %q: got %s, want %s", tt.bound, ids(tasks), tt.want)
		}
	}
	if _, err := ParseRewardBound("2"); err == nil || !strings.HasPrefix(err.Error(), "2 is out of range") {
		t.Errorf("out of range: %v", err)
	}
	// a reward read that fails fails the list
	must(t, s.Close())
	if _, err := s.TasksRewarded(ctx, Query{}, &RewardBound{Lo: 0}); err == nil {
		t.Error("a closed store listed tasks")
	}
}

// TestTreeRecordings: a task's recordings, read in the tree's order; one
// that is gone fails naming it.
func TestTreeRecordings(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	seed(t, s, "t1", 0)
	h, err := NewHumanRecording("t1", "confirm", 1, "Send?", json.RawMessage(`{"answer":"yes"}`))
	must(t, err)
	must(t, s.PutRecording(ctx, h))
	tree, err := s.Tree(ctx, "t1")
	must(t, err)
	calls, err := s.TreeRecordings(ctx, tree)
	must(t, err)
	if len(calls) != 1 || calls[0].Kind != RecordHuman || len(tree.Recordings) != 1 {
		t.Fatalf("calls %+v of %v", calls, tree.Recordings)
	}
	tree.Recordings = append(tree.Recordings, "missing")
	if _, err := s.TreeRecordings(ctx, tree); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "recording missing") {
		t.Errorf("a missing recording: %v", err)
	}
}
