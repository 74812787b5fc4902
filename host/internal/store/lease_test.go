package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

// TestLease: a running task leased by the process holding the store reads
// running, to it and to a reader beside it; once that process has closed
// the store, it reads interrupted (to a reader and to the next writer),
// and listing by status finds it so. Claim and EndTask refuse what an
// operator may not do.
func TestLease(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), ".sextant")
	w, err := Open(ctx, dir, testConfig())
	must(t, err)
	task := &Task{ID: "t1", Pipeline: "p", Status: StatusRunning, Owner: w.Lease()}
	must(t, w.CreateTask(ctx, task))
	must(t, w.CreateTask(ctx, &Task{ID: "t2", Pipeline: "p", Status: StatusWaiting}))
	status := func(s *Store, id string) Status {
		t.Helper()
		got, err := s.Task(ctx, id)
		must(t, err)
		return got.Status
	}
	if st := status(w, "t1"); st != StatusRunning {
		t.Fatalf("own task reads %s, want running", st)
	}
	r, err := Open(ctx, dir, testConfig().WithReadOnly(true))
	must(t, err)
	if st := status(r, "t1"); st != StatusRunning {
		t.Fatalf("a reader beside the owner reads %s, want running", st)
	}
	r.Close()
	// Ended tasks are not claimed; the refusal says why.
	must(t, w.CreateTask(ctx, &Task{ID: "t3", Pipeline: "p", Status: StatusCompleted}))
	if _, err := w.Claim(ctx, "t3"); !errors.Is(err, ErrConflict) || err.Error() != "task t3 already completed" {
		t.Fatalf("claim of a completed task: %v, want %q", err, "task t3 already completed")
	}
	must(t, w.Close())

	r, err = Open(ctx, dir, testConfig().WithReadOnly(true))
	must(t, err)
	if st := status(r, "t1"); st != StatusInterrupted {
		t.Fatalf("with no writer the task reads %s, want interrupted", st)
	}
	got, err := r.Tasks(ctx, Query{Status: StatusInterrupted})
	must(t, err)
	if len(got) != 1 || got[0].ID != "t1" {
		t.Fatalf("interrupted tasks: %+v, want t1", got)
	}
	r.Close()

	w, err = Open(ctx, dir, testConfig())
	must(t, err)
	defer w.Close()
	if st := status(w, "t1"); st != StatusInterrupted {
		t.Fatalf("the next writer reads %s, want interrupted", st)
	}
	before, err := w.Claim(ctx, "t1")
	must(t, err)
	if before.Status != StatusInterrupted || status(w, "t1") != StatusRunning {
		t.Fatalf("claim: was %s, now %s; want interrupted, then running", before.Status, status(w, "t1"))
	}
	// A retry claims incidents only.
	if _, err := w.Claim(ctx, "t2", StatusIncident); !errors.Is(err, ErrConflict) {
		t.Fatalf("claim of a waiting task for a retry: %v, want ErrConflict", err)
	}
	must(t, w.EndTask(ctx, "t2", "", StatusCancelled, func(t *Task) { t.Cancelled = &Cancellation{By: "ann@h", Reason: "stale"} }))
	if got, _ := w.Task(ctx, "t2"); got.Status != StatusCancelled || got.Cancelled == nil || got.Cancelled.By != "ann@h" || got.Waits != nil {
		t.Fatalf("cancelled task: %+v", got)
	}
	if err := w.EndTask(ctx, "t2", "", StatusCancelled, nil); !errors.Is(err, ErrConflict) {
		t.Fatalf("cancelling a cancelled task: %v, want ErrConflict", err)
	}
	// interrupted is how a task reads, never what is written.
	if err := w.SetTaskStatus(ctx, "t1", StatusInterrupted); err == nil {
		t.Fatal("an interrupted status was written")
	}
}
