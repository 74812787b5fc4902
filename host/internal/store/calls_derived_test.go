package store

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// TestRecordCallDerived: calls recorded into a new task and into one in
// the store keep its summary as the records make it (its executions and
// their calls), as the other writes of executions and spans do.
func TestRecordCallDerived(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	for i, ex := range []string{"c-e1", "c-e2"} {
		rec := &Recording{Hash: ex + "-r", Kind: RecordChat, Request: json.RawMessage(`{}`), Response: json.RawMessage(`{}`)}
		must(t, s.RecordCall(ctx, &Call{Task: &Task{ID: "c", Pipeline: "proxy", Status: StatusCompleted}, Execution: &Execution{ID: ex, Status: StatusCompleted},
			Spans: []Span{callSpan("c", ex, 1, int64(10*(i+1)), 2, 0.25)}, Recording: rec}))
	}
	checkDerived(t, s)
	// A completed task has no status index entry: the list finds it by
	// its summary, which a recorded call must therefore write.
	if ts, err := s.Tasks(ctx, Query{Status: StatusCompleted}); err != nil || len(ts) != 1 {
		t.Fatalf("completed tasks %d (%v), want the recorded task", len(ts), err)
	}
	sums := summaries(t, s, Query{})
	if len(sums) != 1 || len(sums[0].Executions) != 2 || len(sums[0].Executions[1].Calls) != 1 {
		t.Fatalf("summaries %+v, want task c with 2 executions, a call each", sums)
	}
}

// TestLayout8RecordCallHealed: a store of layout 8, whose RecordCall
// wrote no summary for the task it made, lists that task by status once
// a writer has opened it (its derived keys are built again).
func TestLayout8RecordCallHealed(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), ".sextant")
	s, err := Open(ctx, dir, testConfig())
	must(t, err)
	rec := &Recording{Hash: "c-e1-r", Kind: RecordChat, Request: json.RawMessage(`{}`), Response: json.RawMessage(`{}`)}
	must(t, s.RecordCall(ctx, &Call{Task: &Task{ID: "c", Pipeline: "proxy", Status: StatusCompleted},
		Execution: &Execution{ID: "c-e1", Status: StatusCompleted}, Spans: []Span{callSpan("c", "c-e1", 1, 10, 2, 0.25)}, Recording: rec}))
	must(t, s.Sync())
	// What layout 8's RecordCall left: no summary entries.
	meta, err := s.encode(storeMeta{Layout: 8})
	must(t, err)
	must(t, s.db.Update(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(pSum)})
		var keys [][]byte
		for it.Rewind(); it.Valid(); it.Next() {
			keys = append(keys, it.Item().KeyCopy(nil))
		}
		it.Close()
		if len(keys) == 0 {
			t.Fatal("no summary entries to remove")
		}
		for _, k := range keys {
			if err := txn.Delete(k); err != nil {
				return err
			}
		}
		return txn.Set([]byte(keyMeta), meta)
	}))
	must(t, s.Close())
	s, err = Open(ctx, dir, testConfig())
	must(t, err)
	defer s.Close()
	if ts, err := s.Tasks(ctx, Query{Status: StatusCompleted}); err != nil || len(ts) != 1 {
		t.Fatalf("completed tasks %d (%v), want the recorded task", len(ts), err)
	}
	checkDerived(t, s)
}
