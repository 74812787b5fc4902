package store

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// callSpan is a provider call with usage and cost.
func callSpan(task, exec string, seq uint64, in, out int64, cost float64) Span {
	return Span{Task: task, Execution: exec, Seq: seq, Name: "chat", Kind: SpanClient, Start: t0, End: t0.Add(time.Millisecond),
		Attributes: Attributes{AttrGenAIUsageInputTokens: Int(in), AttrGenAIUsageOutputTokens: Int(out), attrCostUSD: Float(cost)}}
}

// writeMix writes tasks through every write that derived keys follow:
// creation (CreateTask, Begin), status changes, tags, executions that
// end (PutExecution, CheckpointExecution), replays, rewards (appended and
// one rewritten), span bursts with calls (one longer than a transaction)
// and spans staged twice.
func writeMix(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	for i := range 6 {
		id := fmt.Sprintf("m%d", i)
		must(t, s.CreateTask(ctx, &Task{ID: id, Pipeline: []string{"a", "b"}[i%2], Tags: []string{"x"},
			Strategy: StrategyRef{Name: "s", Version: fmt.Sprintf("1.%d", i%3)}}))
		e := &Execution{Task: id, ID: "e1", Mode: "live"}
		must(t, s.CreateExecution(ctx, e))
		spans := []Span{{Task: id, Execution: "e1", Name: "run", Start: t0, End: t0}, callSpan(id, "e1", 0, 10, 2, 0.1), callSpan(id, "e1", 0, 7, 1, 0.2)}
		must(t, s.AppendSpans(ctx, spans))
		switch i % 3 {
		case 0:
			e.Status, e.Ended = StatusCompleted, e.Started.Add(1234567*time.Nanosecond)
			must(t, s.PutExecution(ctx, e))
			must(t, s.SetTaskStatus(ctx, id, StatusCompleted))
		case 1:
			must(t, s.CheckpointExecution(ctx, &Checkpoint{Task: id, Execution: "e1", Step: 1}, func(ex *Execution) {
				ex.Status, ex.Ended = StatusFailed, ex.Started.Add(3*time.Second)
			}, callSpan(id, "e1", 0, 5, 5, 0.3)))
			must(t, s.SetTaskStatus(ctx, id, StatusFailed))
		case 2:
			must(t, s.SetTaskWaiting(ctx, id, []Wait{{Kind: WaitHuman, Node: "ask"}}))
		}
		for j := range i % 4 {
			must(t, s.AddReward(ctx, &Reward{Task: id, Value: []float64{0.1, 0.7, -0.3}[j]}))
		}
	}
	// A replay of m0: its calls are not the task's usage (metrics skip it).
	must(t, s.CreateExecution(ctx, &Execution{Task: "m0", ID: "e2", Mode: "replay"}))
	must(t, s.AppendSpans(ctx, []Span{callSpan("m0", "e2", 0, 100, 100, 9)}))
	// A rewritten reward: the sum is added up again.
	must(t, s.AddReward(ctx, &Reward{Task: "m3", Seq: 1, Value: 0.9}))
	must(t, s.AddTags(ctx, "m1", "y"))
	must(t, s.UpdateTask(ctx, "m2", func(t *Task) error { t.Pipeline = "c"; return nil }))
	// A burst longer than one transaction.
	long := make([]Span, 600)
	for i := range long {
		long[i] = callSpan("m4", "e1", 0, int64(i), 1, float64(i)/1000)
	}
	must(t, s.AppendSpans(ctx, long))
	// Staged spans, written twice, the second time in another grouping.
	must(t, s.StageSpans(ctx, []Span{callSpan("m5", "e9", 1, 1, 1, 0.5), callSpan("m5", "e9", 2, 2, 2, 0.25)}))
	must(t, s.StageSpans(ctx, []Span{callSpan("m5", "e9", 2, 2, 2, 0.25)}))
	must(t, s.PutExecution(ctx, &Execution{Task: "m5", ID: "e9", Status: StatusCompleted, Started: t0, Ended: t0.Add(time.Second)}))
	// Begin writes a task and its execution at once.
	must(t, s.Begin(ctx, &Task{ID: "m6", Pipeline: "a"}, &Execution{ID: "e1"}, &Checkpoint{Step: 0}))
	// Spans staged before their task is written (a run on Temporal): their
	// usage waits for the task's creation.
	must(t, s.StageSpans(ctx, []Span{callSpan("m7", "e1", 1, 3, 4, 0.5), callSpan("m7", "e1", 2, 5, 6, 0.125)}))
	must(t, s.Begin(ctx, &Task{ID: "m7", Pipeline: "b"}, &Execution{ID: "e1"}, &Checkpoint{Step: 0}))
	// A task whose created time changes: its summary moves.
	must(t, s.UpdateTask(ctx, "m1", func(t *Task) error { t.Created = t.Created.Add(-time.Hour); return nil }))
	must(t, s.AddReward(ctx, &Reward{Task: "m1", Value: 0.5}))
}

// derivedKeys returns every derived key and its value.
func derivedKeys(t *testing.T, s *Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	must(t, s.db.View(func(txn *badger.Txn) error {
		for _, p := range derivedPrefixes {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(p), PrefetchValues: true})
			for it.Seek([]byte(p)); it.ValidForPrefix([]byte(p)); it.Next() {
				v, err := it.Item().ValueCopy(nil)
				if err != nil {
					it.Close()
					return err
				}
				out[string(it.Item().Key())] = string(v)
			}
			it.Close()
		}
		return nil
	}))
	return out
}

// checkDerived checks that every task's derived keys say what its
// records say: the summary read from them equals the one read from the
// records, and the status indexes and summaries hold nothing else (usage
// entries are compared through the summaries: bursts group them).
func checkDerived(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	if !s.indexed {
		t.Fatal("the store does not use its derived keys")
	}
	want := map[string]string{}
	var ids []string
	must(t, s.eachStoredTask(ctx, func(id string, d *DamageError) error {
		if d != nil {
			return d
		}
		ids = append(ids, id)
		return nil
	}))
	for _, id := range ids {
		must(t, s.db.View(func(txn *badger.Txn) error {
			fromRecords, err := summarizeTxn(ctx, txn, id)
			if err != nil {
				return err
			}
			kvs, err := s.derivedKVs(fromRecords, nil)
			if err != nil {
				return err
			}
			for _, e := range kvs {
				if !bytes.HasPrefix(e.k, []byte(pSum)) {
					want[string(e.k)] = string(e.v)
				} else if bytes.HasSuffix(e.k, []byte{'/', sumTask}) {
					want[string(e.k)] = "" // where it is; what it says is compared below
				}
			}
			it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(pSum)})
			defer it.Close()
			fromKeys, err := readSummary(ctx, txn, it, id, fromRecords.Created)
			if err != nil {
				return err
			}
			if !reflect.DeepEqual(fromKeys, fromRecords) {
				t.Errorf("task %s: summary from derived keys\n%+v\nfrom records\n%+v", id, fromKeys, fromRecords)
			}
			return nil
		}))
	}
	// Summaries are compared as read (above): how many entries hold one
	// depends on the transactions that wrote it.
	got := derivedKeys(t, s)
	for k := range got {
		if strings.HasPrefix(k, pSum) {
			if strings.HasSuffix(k, "/a") {
				got[k] = ""
			} else {
				delete(got, k)
			}
		}
	}
	if !reflect.DeepEqual(got, want) {
		for k, v := range got {
			if want[k] != v {
				t.Errorf("derived key %s = %q, want %q", printableKey([]byte(k)), v, want[k])
			}
		}
		for k := range want {
			if _, ok := got[k]; !ok {
				t.Errorf("derived key %s missing", printableKey([]byte(k)))
			}
		}
	}
}

func TestDerivedKeysFollowWrites(t *testing.T) {
	s := openTest(t)
	writeMix(t, s)
	checkDerived(t, s)
	ctx := context.Background()

	// What the summaries say, spelled out for a few tasks.
	sums := map[string]*TaskSummary{}
	must(t, s.EachSummary(ctx, Query{}, func(ts *TaskSummary) error { sums[ts.ID] = ts; return nil }))
	if len(sums) != 8 {
		t.Fatalf("%d summaries, want 8", len(sums))
	}
	m0 := sums["m0"]
	if m0.Status != StatusCompleted || m0.Pipeline != "a" || m0.Version != "1.0" || m0.Rewards != 0 ||
		len(m0.Executions) != 2 || !m0.Executions[0].Ended || m0.Executions[0].Latency != 1234*time.Microsecond ||
		len(m0.Executions[0].Calls) != 2 || m0.Executions[0].Calls[1].Tokens != 8 || m0.Executions[1].Mode != "replay" {
		t.Errorf("m0: %+v", m0)
	}
	if a, b, c := 0.9, 0.7, -0.3; sums["m3"].Rewards != 3 || sums["m3"].RewardSum != a+b+c {
		t.Errorf("m3 rewards: %d, sum %v; want 3, %v", sums["m3"].Rewards, sums["m3"].RewardSum, a+b+c)
	}
	if m4 := sums["m4"]; len(m4.Executions[0].Calls) != 603 || m4.Executions[0].Calls[602].Seq != 604 {
		t.Errorf("m4: %d calls", len(m4.Executions[0].Calls))
	}
	if m5 := sums["m5"]; len(m5.Executions) != 2 || len(m5.Executions[1].Calls) != 2 || m5.Executions[1].Calls[1].CostUSD != 0.25 {
		t.Errorf("m5: %+v", m5)
	}
	if m7 := sums["m7"]; len(m7.Executions) != 1 || len(m7.Executions[0].Calls) != 2 || m7.Executions[0].Calls[1].Tokens != 11 {
		t.Errorf("m7 (staged before its task): %+v", m7)
	}
	if m1 := sums["m1"]; m1.Rewards != 2 || len(m1.Executions) != 1 || len(m1.Executions[0].Calls) != 3 {
		t.Errorf("m1 (created time changed): %+v", m1)
	}

	// Lists by status and by pipeline and status walk their indexes.
	for _, q := range []Query{{Status: StatusCompleted}, {Status: StatusWaiting}, {Status: StatusFailed, Pipeline: "b"}, {Status: StatusRunning, Pipeline: "a"}, {Pipeline: "c"}} {
		got, err := s.Tasks(ctx, q)
		must(t, err)
		all, err := s.Tasks(ctx, Query{})
		must(t, err)
		var want []string
		for _, tk := range all {
			if tk.Status == q.Status || q.Status == "" {
				if q.Pipeline == "" || tk.Pipeline == q.Pipeline {
					want = append(want, tk.ID)
				}
			}
		}
		var ids []string
		for _, tk := range got {
			ids = append(ids, tk.ID)
		}
		if !slices.Equal(ids, want) || len(want) == 0 {
			t.Errorf("%+v: %v, want %v", q, ids, want)
		}
	}
	n, sum, err := s.RewardStats(ctx, "m2")
	must(t, err)
	if a, b := 0.1, 0.7; n != 2 || sum != a+b { // added at run time, as the store adds
		t.Errorf("reward stats of m2: %d, %v", n, sum)
	}
	rep, err := s.Check(ctx)
	must(t, err)
	if rep.Damaged() {
		t.Errorf("check: %+v", rep)
	}
}

// downgrade makes s a store of layout 1, as a sextant before derived
// keys wrote it: no derived keys, layout 1.
func downgrade(t *testing.T, s *Store) {
	t.Helper()
	must(t, s.db.DropPrefix([]byte(pStatus), []byte(pPipeStatus), []byte(pSum)))
	rawSet(t, s, keyMeta, append([]byte{schemaVersion}, `{"layout":1}`...))
}

func summaries(t *testing.T, s *Store, q Query) []TaskSummary {
	t.Helper()
	var out []TaskSummary
	must(t, s.EachSummary(context.Background(), q, func(ts *TaskSummary) error { out = append(out, *ts); return nil }))
	return out
}

// TestMigrate: a store of layout 1 is read by a reader from its records,
// and a writer builds its derived keys once at Open.
func TestMigrate(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), ".sextant")
	s, err := Open(ctx, dir, testConfig())
	must(t, err)
	writeMix(t, s)
	want := summaries(t, s, Query{})
	wantWaiting, err := s.Tasks(ctx, Query{Status: StatusWaiting})
	must(t, err)
	downgrade(t, s)
	must(t, s.Close())

	r, err := Open(ctx, dir, testConfig().WithReadOnly(true))
	must(t, err)
	if r.indexed {
		t.Fatal("a reader of layout 1 uses derived keys")
	}
	if got := summaries(t, r, Query{}); !reflect.DeepEqual(got, want) {
		t.Errorf("reader of layout 1: summaries\n%+v\nwant\n%+v", got, want)
	}
	got, err := r.Tasks(ctx, Query{Status: StatusWaiting})
	must(t, err)
	if !reflect.DeepEqual(got, wantWaiting) {
		t.Errorf("reader of layout 1: waiting %+v, want %+v", got, wantWaiting)
	}
	must(t, r.Close())

	w, err := Open(ctx, dir, testConfig())
	must(t, err)
	defer w.Close()
	checkDerived(t, w)
	if got := summaries(t, w, Query{}); !reflect.DeepEqual(got, want) {
		t.Errorf("migrated: summaries\n%+v\nwant\n%+v", got, want)
	}
	var m storeMeta
	must(t, w.db.View(func(txn *badger.Txn) error { return get(txn, []byte(keyMeta), &m) }))
	if m.Layout != layoutVersion {
		t.Errorf("layout %d after migration", m.Layout)
	}
}

// TestMigrateKilled: a writer killed while it builds the derived keys
// leaves m/derive set; a reader then reads records, and the next writer
// builds them all again.
func TestMigrateKilled(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), ".sextant")
	s, err := Open(ctx, dir, testConfig())
	must(t, err)
	for i := range 20 {
		must(t, s.CreateTask(ctx, &Task{ID: fmt.Sprintf("k%02d", i), Pipeline: "p"}))
	}
	writeMix(t, s)
	want := summaries(t, s, Query{})
	downgrade(t, s)
	// A stale entry a partial rebuild could leave: it must not survive.
	rawSet(t, s, string(statusIndexKey(StatusFailed, t0, "k00")), nil)
	must(t, s.Close())

	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SEXTANT_STORE_HELPER=hold", "SEXTANT_STORE_DIR="+dir,
		"SEXTANT_FAILPOINT=store.migrate.batch:2", "SEXTANT_STORE_MIGRATE_BATCH=4")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "failpoint store.migrate.batch:2") {
		t.Fatalf("the helper was not killed in the migration: %v\n%s", err, out)
	}

	r, err := Open(ctx, dir, testConfig().WithReadOnly(true))
	must(t, err)
	if r.indexed {
		t.Fatal("a reader uses derived keys an interrupted rebuild left")
	}
	must(t, r.Close())
	w, err := Open(ctx, dir, testConfig())
	must(t, err)
	defer w.Close()
	checkDerived(t, w)
	if got := summaries(t, w, Query{}); !reflect.DeepEqual(got, want) {
		t.Errorf("summaries\n%+v\nwant\n%+v", got, want)
	}
}

// TestDerivedExportImport: an import builds the derived keys of what it
// writes, for new tasks and for tasks it adds records to, and a store
// salvaged (which imports) has them too.
func TestDerivedExportImport(t *testing.T) {
	ctx := context.Background()
	src := openTest(t)
	writeMix(t, src)
	var buf bytes.Buffer
	_, err := src.Export(ctx, &buf, ExportOptions{Checkpoints: true})
	must(t, err)
	dst := openTest(t)
	_, err = dst.Import(ctx, bytes.NewReader(buf.Bytes()), "export")
	must(t, err)
	checkDerived(t, dst)
	if got, want := summaries(t, dst, Query{}), summaries(t, src, Query{}); !reflect.DeepEqual(got, want) {
		t.Errorf("imported summaries\n%+v\nwant\n%+v", got, want)
	}
	// Records added to a task the store has.
	more := `{"type":"header","format":"sextant-export","version":1}
{"type":"execution","task":"m6","id":"e7","mode":"live","status":"completed","trace_id":"` + TraceIDFor("m6", "e7") + `","started":"2026-02-09T10:30:00Z","ended":"2026-02-09T10:30:02Z"}
{"type":"span","task":"m6","execution":"e7","seq":1,"trace_id":"` + TraceIDFor("m6", "e7") + `","span_id":"` + SpanIDFor("m6", "e7", 1) + `","name":"chat","start":"2026-02-09T10:30:00Z","end":"2026-02-09T10:30:01Z","attributes":{"gen_ai.usage.input_tokens":3,"gen_ai.usage.output_tokens":4}}
{"type":"reward","task":"m6","seq":1,"value":0.5,"created":"2026-02-09T10:30:03Z"}
`
	_, err = dst.Import(ctx, strings.NewReader(more), "more")
	must(t, err)
	checkDerived(t, dst)
	n, sum, err := dst.RewardStats(ctx, "m6")
	must(t, err)
	if n != 1 || sum != 0.5 {
		t.Errorf("m6 rewards after import: %d, %v", n, sum)
	}

	// Salvage copies through Import.
	sdir := filepath.Join(t.TempDir(), ".sextant")
	must(t, dst.Close())
	ro, err := Open(ctx, dst.Dir(), testConfig().WithReadOnly(true))
	must(t, err)
	defer ro.Close()
	salv, err := Open(ctx, sdir, testConfig())
	must(t, err)
	defer salv.Close()
	_, err = ro.Salvage(ctx, salv)
	must(t, err)
	checkDerived(t, salv)
}
