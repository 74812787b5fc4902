package store

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// stagedCalls is the calls a task's summary lists, and the number of
// keys left under x/spend/.
func stagedCalls(t *testing.T, s *Store, task string) ([]CallUsage, int) {
	t.Helper()
	ctx := context.Background()
	var calls []CallUsage
	must(t, s.EachSummary(ctx, Query{}, func(ts *TaskSummary) error {
		if ts.ID == task {
			for _, es := range ts.Executions {
				calls = append(calls, es.Calls...)
			}
		}
		return nil
	}))
	left := 0
	must(t, s.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = []byte(pSumPending)
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Seek(opts.Prefix); it.ValidForPrefix(opts.Prefix); it.Next() {
			left++
		}
		return nil
	}))
	return calls, left
}

// TestMarksFromBeforeOpen: usage staged by an earlier process waits
// under x/spend/; a Begin of its task in this one, which staged nothing,
// adopts it (markWatch looks in Badger).
func TestMarksFromBeforeOpen(t *testing.T) {
	holdJournal(t)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), ".sextant")
	s, err := Open(ctx, dir, testConfig())
	must(t, err)
	must(t, s.StageSpans(ctx, []Span{callSpan("b1", "b1-e1", 1, 10, 2, 0.25)}))
	must(t, s.Close())
	s, err = Open(ctx, dir, testConfig())
	must(t, err)
	defer s.Close()
	must(t, s.Begin(ctx, &Task{ID: "a0", Pipeline: "p"}, &Execution{ID: "a0-e1"}, &Checkpoint{State: []byte(`{}`)}))
	must(t, s.Begin(ctx, &Task{ID: "b1", Pipeline: "p"}, &Execution{ID: "b1-e1"}, &Checkpoint{State: []byte(`{}`)}))
	must(t, s.applyPending())
	calls, left := stagedCalls(t, s, "b1")
	if want := []CallUsage{{1, 12, 0.25}}; !slices.Equal(calls, want) || left != 0 {
		t.Errorf("calls %v and %d keys left staged, want %v and none", calls, left, want)
	}
	checkDerived(t, s)
}

// TestMarksStagedDuringApply: spans staged for a task while the apply
// creating it is between its look for the task's mark (none) and its
// commit are not left staged: the write waits for the commit, then finds
// the task.
func TestMarksStagedDuringApply(t *testing.T) {
	holdJournal(t)
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), ".sextant"), testConfig())
	must(t, err)
	defer s.Close()
	must(t, s.Begin(ctx, &Task{ID: "x1", Pipeline: "p"}, &Execution{ID: "x1-e1"}, &Checkpoint{State: []byte(`{}`)}))
	staged, noted := make(chan error, 1), make(chan struct{})
	first := true
	setTestHook(func(p string) {
		switch p {
		case "apply-flushed":
			if first {
				first = false
				go func() { staged <- s.StageSpans(ctx, []Span{callSpan("x1", "x1-e1", 5, 3, 4, 0.5)}) }()
				<-noted
			}
		case "marks-noted":
			close(noted)
		}
	})
	defer setTestHook(nil)
	must(t, s.applyPending())
	must(t, <-staged)
	must(t, s.applyPending())
	calls, left := stagedCalls(t, s, "x1")
	if want := []CallUsage{{5, 7, 0.5}}; !slices.Equal(calls, want) || left != 0 {
		t.Errorf("calls %v and %d keys left staged, want %v and none", calls, left, want)
	}
}

// TestMarkWatch: a markWatch says a task may have a mark once it is
// noted, every task once more than markWatchMax are or raw entries are
// written, and every task when Badger held a mark at its first look.
func TestMarkWatch(t *testing.T) {
	s := openTest(t)
	must(t, s.db.Update(func(txn *badger.Txn) error {
		var m markWatch
		if m.may(txn, "a") {
			t.Error("a task of an empty store may have a mark")
		}
		m.note("a")
		if !m.may(txn, "a") || m.may(txn, "b") {
			t.Error("only the noted task may have a mark")
		}
		for i := range markWatchMax {
			m.note(fmt.Sprint(i))
		}
		if !m.may(txn, "b") {
			t.Error("past markWatchMax tasks, another task may not have a mark")
		}
		var raw markWatch
		raw.noteAll()
		if !raw.may(txn, "b") {
			t.Error("after raw entries, a task may not have a mark")
		}
		if err := txn.Set(pendingMarkKey("z"), nil); err != nil {
			return err
		}
		var open markWatch
		if !open.may(txn, "b") {
			t.Error("with a mark in Badger, a task may not have a mark")
		}
		return nil
	}))
}

// TestMarksStagedAfterLook: usage staged for a task after the applier
// looked for marks (and found none) is adopted by the task's Begin: the
// write noted its task.
func TestMarksStagedAfterLook(t *testing.T) {
	holdJournal(t)
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), ".sextant"), testConfig())
	must(t, err)
	defer s.Close()
	must(t, s.Begin(ctx, &Task{ID: "a0", Pipeline: "p"}, &Execution{ID: "a0-e1"}, &Checkpoint{State: []byte(`{}`)}))
	must(t, s.applyPending()) // the look: no mark
	must(t, s.StageSpans(ctx, []Span{callSpan("b1", "b1-e1", 1, 10, 2, 0.25)}))
	if _, left := stagedCalls(t, s, "b1"); left == 0 {
		t.Fatal("nothing staged under x/spend/: the test tests nothing")
	}
	must(t, s.Begin(ctx, &Task{ID: "b1", Pipeline: "p"}, &Execution{ID: "b1-e1"}, &Checkpoint{State: []byte(`{}`)}))
	must(t, s.applyPending())
	calls, left := stagedCalls(t, s, "b1")
	if want := []CallUsage{{1, 12, 0.25}}; !slices.Equal(calls, want) || left != 0 {
		t.Errorf("calls %v and %d keys left staged, want %v and none", calls, left, want)
	}
}
