package store

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// chainRun writes what a 10-step chain run writes through the journal:
// Begin, ten checkpoints (five after a provider call, recorded and
// linked to the task, with a call span; five after an expression, with a
// plain span) and FinishExecution with the root span (seq 1) and the
// task's status.
// each, if not nil, runs after each write.
func chainRun(t testing.TB, s *Store, id string, each func()) {
	t.Helper()
	ctx := context.Background()
	if each == nil {
		each = func() {}
	}
	task := &Task{ID: id, Pipeline: "chain10", Input: json.RawMessage(`{"topic":"x"}`)}
	ex := &Execution{ID: id + "-e1", Mode: "live"}
	must(t, s.Begin(ctx, task, ex, &Checkpoint{State: []byte(`{"step":0}`)}))
	each()
	seq := uint64(1)
	for n := 1; n <= 10; n++ {
		seq++
		sp := Span{Task: id, Execution: ex.ID, Seq: seq, Name: fmt.Sprintf("step %d", n), Start: t0, End: t0}
		if n%2 == 1 {
			must(t, s.PutRecording(ctx, &Recording{Hash: fmt.Sprintf("%s-r%d", id, n), Kind: RecordChat, Task: id,
				Request: json.RawMessage(`{}`), Response: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n))}))
			each()
			sp = callSpan(id, ex.ID, seq, 40, 7, 0.001)
		}
		must(t, s.Checkpoint(ctx, &Checkpoint{Task: id, Execution: ex.ID, Step: uint64(n), State: []byte(fmt.Sprintf(`{"step":%d}`, n))}, sp))
		each()
	}
	root := Span{Task: id, Execution: ex.ID, Seq: 1, Name: "run", Start: t0, End: t0}
	must(t, s.FinishExecution(ctx, &Checkpoint{Task: id, Execution: ex.ID, Step: 10, State: []byte(`{"step":10}`)},
		func(e *Execution) { e.Status, e.Ended = StatusCompleted, t0 }, StatusCompleted, root))
}

// entryCounts counts the entries (every version, tombstones too) Badger
// holds, by key prefix: t/<sub>, x/<index>/ (x/sum/<sub>), or the first
// two bytes.
func entryCounts(t testing.TB, s *Store) map[string]int {
	t.Helper()
	out := map[string]int{}
	must(t, s.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.AllVersions, opts.PrefetchValues = true, false
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			out[entryClass(string(it.Item().Key()))]++
		}
		return nil
	}))
	return out
}

func entryClass(k string) string {
	switch {
	case strings.HasPrefix(k, pTask):
		if _, sub, ok := parseTaskSub([]byte(k)); ok {
			return pTask + string(sub[0])
		}
	case strings.HasPrefix(k, pSum) && len(k) > len(pSum)+8:
		rest := k[len(pSum)+8:]
		if i := strings.IndexByte(rest, '/'); i >= 0 && i+1 < len(rest) {
			return pSum + string(rest[i+1])
		}
	case strings.HasPrefix(k, pIndex):
		if i := strings.IndexByte(k[len(pIndex):], '/'); i >= 0 {
			return k[:len(pIndex)+i+1]
		}
	}
	return k[:min(2, len(k))]
}

// TestApplyEntriesPerRun pins how many Badger entries the applier writes
// for a 10-step run whose records one apply transaction takes (as it
// does for most runs), and for one applied write by write: every entry
// is allocations and CPU in Badger's write path, and a version that
// compaction later drops.
func TestApplyEntriesPerRun(t *testing.T) {
	const runs = 20
	for _, bc := range []struct {
		name  string
		split bool // apply each write on its own
		want  map[string]int
	}{
		{name: "batched", want: map[string]int{
			"r/": 5, "t/a": 1, "t/e": 1, "t/h": 5, "t/k": 1, "t/s": 1,
			"x/pipe/": 1, "x/time/": 1, "x/status/": 1, "x/pstat/": 1, "x/sat/": 1,
			"x/sum/a": 1, "x/sum/e": 1, "x/sum/u": 1,
		}},
		{name: "split", split: true, want: map[string]int{
			"r/": 5, "t/a": 2, "t/e": 2, "t/h": 5, "t/k": 12, "t/s": 11,
			"x/pipe/": 1, "x/time/": 1, "x/status/": 3, "x/pstat/": 3, "x/sat/": 1,
			"x/sum/a": 2, "x/sum/e": 2, "x/sum/u": 5,
		}},
	} {
		t.Run(bc.name, func(t *testing.T) {
			holdJournal(t)
			s := openTest(t)
			before := entryCounts(t, s)
			var each func()
			if bc.split {
				each = func() { must(t, s.Sync()) }
			}
			for i := range runs {
				chainRun(t, s, fmt.Sprintf("run-%02d", i), each)
			}
			must(t, s.Sync())
			after := entryCounts(t, s)
			got := map[string]int{}
			total := 0
			for k, n := range after {
				if d := n - before[k]; d > 0 && !strings.HasPrefix(k, "m/") {
					got[k] = d
					total += d
				}
			}
			want := map[string]int{}
			wantTotal := 0
			for k, n := range bc.want {
				want[k] = n * runs
				wantTotal += n
			}
			if !maps.Equal(got, want) {
				keys := slices.Sorted(maps.Keys(got))
				var b strings.Builder
				for _, k := range keys {
					fmt.Fprintf(&b, " %s=%.2f", k, float64(got[k])/runs)
				}
				t.Errorf("%.2f entries per run, want %d:%s", float64(total)/runs, wantTotal, b.String())
			}
			for i := range runs {
				checkChainRun(t, s, fmt.Sprintf("run-%02d", i))
			}
			checkDerived(t, s)
		})
	}
}

// checkChainRun reads a chainRun back through every reader of what it
// wrote: the tree (links, spans, checkpoint), the status indexes and the
// summary.
func checkChainRun(t *testing.T, s *Store, id string) {
	t.Helper()
	ctx := context.Background()
	tr, err := s.Tree(ctx, id)
	must(t, err)
	var hashes []string
	for n := 1; n <= 10; n += 2 {
		hashes = append(hashes, fmt.Sprintf("%s-r%d", id, n))
	}
	if tr.Task.Status != StatusCompleted || !slices.Equal(tr.Recordings, hashes) || len(tr.Executions) != 1 {
		t.Fatalf("%s: tree: status %s, recordings %v, %d executions", id, tr.Task.Status, tr.Recordings, len(tr.Executions))
	}
	e := tr.Executions[0]
	if e.Checkpoint == nil || e.Checkpoint.Step != 10 || len(e.Spans) != 11 || e.Spans[0].Name != "run" || e.Execution.Status != StatusCompleted {
		t.Fatalf("%s: execution %+v, checkpoint %+v, %d spans", id, e.Execution, e.Checkpoint, len(e.Spans))
	}
	for i, sp := range e.Spans {
		if sp.Seq != uint64(i+1) {
			t.Fatalf("%s: span %d has seq %d", id, i, sp.Seq)
		}
	}
	for _, st := range []Status{StatusRunning, StatusCompleted} {
		tasks, err := s.Tasks(ctx, Query{Status: st, Pipeline: "chain10"})
		must(t, err)
		if has := slices.ContainsFunc(tasks, func(x Task) bool { return x.ID == id }); has != (st == StatusCompleted) {
			t.Fatalf("%s: listed as %s: %v", id, st, has)
		}
	}
}
