package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
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
			"r/": 5, "t/a": 1, "t/e": 1, "t/s": 1,
			"x/pipe/": 1, "x/time/": 1, "x/sum/a": 1,
		}},
		{name: "split", split: true, want: map[string]int{
			"r/": 5, "t/a": 2, "t/e": 2, "t/h": 5, "t/k": 11, "t/s": 11,
			"x/pipe/": 1, "x/time/": 1, "x/status/": 2, "x/pstat/": 2,
			"x/sum/a": 2, "x/sum/e": 1, "x/sum/u": 5,
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
// wrote: the tree (links, spans, checkpoint), its recordings, its latest
// checkpoint, the status indexes and the summary.
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
	for i, h := range hashes {
		r, err := s.Recording(ctx, h)
		must(t, err)
		if want := fmt.Sprintf(`{"n":%d}`, 2*i+1); string(r.Response) != want || r.Task != id {
			t.Fatalf("%s: recording %s: task %s, response %s, want %s", id, h, r.Task, r.Response, want)
		}
	}
	if c, err := s.LatestCheckpoint(ctx, id, id+"-e1"); err != nil || c.Step != 10 {
		t.Fatalf("%s: latest checkpoint %+v, %v", id, c, err)
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

// writeLinksStore writes tasks whose runs link recordings over several
// apply transactions (a recording linked again, and one linked by
// RecordCall as a replay's), as layout 6 wrote links (one entry each) or
// as layout 7 does, and marks the store with the layout.
func writeLinksStore(t *testing.T, dir string, layout int) {
	t.Helper()
	defer func(v, f bool) { mergeLinks, foldParts = v, f }(mergeLinks, foldParts)
	mergeLinks, foldParts = layout >= 7, layout >= 9
	holdJournal(t)
	ctx := context.Background()
	s, err := Open(ctx, dir, testConfig())
	must(t, err)
	rec := func(task, hash string) {
		must(t, s.PutRecording(ctx, &Recording{Hash: hash, Kind: RecordChat, Task: task,
			Request: json.RawMessage(`{}`), Response: json.RawMessage(`{}`)}))
	}
	for _, id := range []string{"a", "b"} {
		must(t, s.Begin(ctx, &Task{ID: id, Pipeline: "p"}, &Execution{ID: id + "-e1"}, &Checkpoint{State: []byte(`{}`)}))
		rec(id, id+"-r3")
		rec(id, id+"-r1")
		rec(id, id+"-r2")
		rec(id, id+"-r1") // used again
	}
	must(t, s.Sync())
	rec("a", "a-r3") // the first link of the entry above again, with more
	rec("a", "a-r5")
	rec("a", "b-r1") // another task's
	must(t, s.Sync())
	rec("a", "a-r4")
	must(t, s.Sync())
	must(t, s.RecordCall(ctx, &Call{Task: &Task{ID: "a", Pipeline: "p"}, Execution: &Execution{ID: "a-e2"}, Replayed: "a-r3"}))
	meta, err := s.encode(storeMeta{Layout: layout})
	must(t, err)
	must(t, s.db.Update(func(txn *badger.Txn) error { return txn.Set([]byte(keyMeta), meta) }))
	must(t, s.Close())
}

// readLinks is what the readers of recording links make of tasks a and
// b: their trees' recordings, the recordings read for them, and the
// export.
func readLinks(t *testing.T, s *Store) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	for _, id := range []string{"a", "b"} {
		tr, err := s.Tree(ctx, id)
		must(t, err)
		recs, err := s.TreeRecordings(ctx, tr)
		must(t, err)
		fmt.Fprintf(&b, "%s: %v %d\n", id, tr.Recordings, len(recs))
	}
	_, err := s.Export(ctx, &b, ExportOptions{Query: Query{Pipeline: "p"}})
	must(t, err)
	return b.String()
}

// TestLayout6ReadsAsLayout7: a store whose recording links are one entry
// each (layout 6) reads exactly as one whose links of a transaction are
// one entry (layout 7), through every reader of links, and as the store
// an import of its export makes; the latter has fewer link entries, a
// link written again keeps what its entry named, and a writer marks a
// layout-6 store with the current layout.
func TestLayout6ReadsAsLayout7(t *testing.T) {
	ctx := context.Background()
	dir6, dir7 := filepath.Join(t.TempDir(), "6"), filepath.Join(t.TempDir(), "7")
	writeLinksStore(t, dir6, 6)
	writeLinksStore(t, dir7, 7)
	var reads [3]string
	var links [2]int
	for i, dir := range []string{dir6, dir7} {
		s, err := Open(ctx, dir, testConfig().WithReadOnly(true))
		must(t, err)
		reads[i] = readLinks(t, s)
		links[i] = entryCounts(t, s)[pTask+string(subLink)]
		must(t, s.Close())
	}
	want := "a: [a-r1 a-r2 a-r3 a-r4 a-r5 b-r1] 6\nb: [b-r1 b-r2 b-r3] 3\n"
	if !strings.HasPrefix(reads[0], want) || reads[0] != reads[1] {
		t.Fatalf("layout 6 reads as\n%s\nlayout 7 as\n%s\nwant them equal, starting\n%s", reads[0], reads[1], want)
	}
	// Versions: a's r3 r1 r2 one entry, r3 r5 b-r1 into it, r4 alone,
	// the replay's r3 into it again; b's one.
	if links[0] != 11 || links[1] != 5 {
		t.Fatalf("link entries: %d in layout 6, %d in layout 7; want 11, 5", links[0], links[1])
	}
	imp := openTest(t)
	var exp strings.Builder
	s, err := Open(ctx, dir7, testConfig())
	must(t, err)
	var m storeMeta
	must(t, s.db.View(func(txn *badger.Txn) error { return get(txn, []byte(keyMeta), &m) }))
	_, err = s.Export(ctx, &exp, ExportOptions{})
	must(t, err)
	must(t, s.Close())
	_, err = imp.Import(ctx, strings.NewReader(exp.String()), "export")
	must(t, err)
	if got := readLinks(t, imp); got != reads[1] {
		t.Fatalf("imported, the store reads as\n%s\nwant\n%s", got, reads[1])
	}
	s, err = Open(ctx, dir6, testConfig())
	must(t, err)
	defer s.Close()
	must(t, s.db.View(func(txn *badger.Txn) error { return get(txn, []byte(keyMeta), &m) }))
	if m.Layout != layoutVersion {
		t.Fatalf("layout %d after a writer opened a layout-6 store, want %d", m.Layout, layoutVersion)
	}
}

// TestApplierKeys: the keys the applier builds in its arena are those
// the key functions build.
func TestApplierKeys(t *testing.T) {
	var a applier
	id := seqID{"task-1", "exec-1"}
	for range 2000 { // past an arena's end
		if got, want := a.execSubKey(id, subExec), execKey(id.task, id.exec); !bytes.Equal(got, want) {
			t.Fatalf("execution key %q, want %q", got, want)
		}
		if got, want := a.execSubKey(id, subCheckpoint), checkpointKey(id.task, id.exec); !bytes.Equal(got, want) {
			t.Fatalf("checkpoint key %q, want %q", got, want)
		}
	}
}

// TestSumTaskValue: the summary value written without reflection is the
// one s.encode writes, redaction included.
func TestSumTaskValue(t *testing.T) {
	s := openTest(t)
	redacted := false
	for _, tk := range []Task{
		{Status: StatusRunning, Pipeline: "p"},
		{Status: StatusCompleted, Pipeline: "a <b> & \"c\" \u2028 é", Strategy: StrategyRef{Version: "1.2.0"}},
		{Status: StatusFailed, Pipeline: "token sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD", Strategy: StrategyRef{Version: "\x01"}},
	} {
		want, err := s.encode(sumTaskVal{Status: tk.Status, Pipeline: tk.Pipeline, Version: tk.Strategy.Version})
		must(t, err)
		got, err := s.sumTaskValue(&tk)
		must(t, err)
		if !bytes.Equal(got, want) {
			t.Errorf("sumTaskValue %q, want %q", got, want)
		}
		redacted = redacted || bytes.Contains(got, []byte("REDACTED"))
	}
	if !redacted {
		t.Error("no pipeline name was redacted: the test misses redaction")
	}
}

// TestBegunFinishMatchesReplay applies live runs whose Begin and finish
// one apply transaction takes, the finish then starting from the task
// Begin journaled (jrec.begun), and replays the same journal records
// from a copy of the store taken before they were applied, the finish
// then reading the task from Badger: both stores hold the same entries,
// byte for byte. Tasks whose record would not decode to the task Begin
// got (redacted, a body encoding/json compacts, a body of its own) have
// no such copy; a change the caller makes to its task after Begin does
// not reach the copy.
func TestBegunFinishMatchesReplay(t *testing.T) {
	holdJournal(t)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), ".sextant")
	image := filepath.Join(t.TempDir(), "image")
	s, err := Open(ctx, dir, testConfig())
	must(t, err)
	big := json.RawMessage(`"` + strings.Repeat("x", bodyInline) + `"`)
	for _, c := range []struct {
		task  *Task
		begun bool
	}{
		{&Task{ID: "plain", Pipeline: "chain10", Input: json.RawMessage(`{"topic":"x"}`), Tags: []string{"b", "a"},
			Rules: map[string]string{"p": "h"}, Strategy: StrategyRef{Name: "s", Version: "1"}, Start: "go"}, true},
		{&Task{ID: "owned", Pipeline: "chain10", Owner: &Lease{PID: 7, Host: "h", Started: t0}}, true},
		{&Task{ID: "secret", Pipeline: "chain10", Input: json.RawMessage(`{"api_key":"hunter2"}`)}, false},
		{&Task{ID: "spaced", Pipeline: "chain10", Input: json.RawMessage(`{ "topic": "x" }`)}, false},
		{&Task{ID: "html", Pipeline: "chain10", Input: json.RawMessage(`{"topic":"<x>"}`)}, false},
		{&Task{ID: "large", Pipeline: "chain10", Input: big}, false},
	} {
		id := c.task.ID
		ex := &Execution{ID: id + "-e1"}
		must(t, s.Begin(ctx, c.task, ex, &Checkpoint{State: []byte(`{"step":0}`)}))
		s.jr.mu.Lock()
		begun := s.jr.recs[len(s.jr.recs)-1].begun
		s.jr.mu.Unlock()
		if (begun != nil) != c.begun {
			t.Errorf("%s: Begin's record has a task copy: %t, want %t", id, begun != nil, c.begun)
		}
		// The caller's task is its own once Begin returns.
		c.task.Pipeline, c.task.Start = "changed", "changed"
		if len(c.task.Tags) > 0 {
			c.task.Tags[0] = "changed"
		}
		if len(c.task.Input) > 0 {
			c.task.Input[1] = ' '
		}
		for k := range c.task.Rules {
			c.task.Rules[k] = "changed"
		}
		sp := Span{Task: id, Execution: ex.ID, Seq: 2, Name: "step 1", Start: t0, End: t0}
		must(t, s.Checkpoint(ctx, &Checkpoint{Task: id, Execution: ex.ID, Step: 1, State: []byte(`{"step":1}`)}, sp))
		root := Span{Task: id, Execution: ex.ID, Seq: 1, Name: "run", Start: t0, End: t0}
		must(t, s.FinishExecution(ctx, &Checkpoint{Task: id, Execution: ex.ID, Step: 1, State: []byte(`{"step":1}`)},
			func(e *Execution) { e.Status, e.Ended = StatusCompleted, t0 }, StatusCompleted, root))
	}
	crashImage(t, dir, image)
	live := storeKeys(t, s) // applies the journal (Sync)
	must(t, s.Close())
	r, err := Open(ctx, image, testConfig())
	must(t, err)
	defer r.Close()
	replayed := storeKeys(t, r)
	if len(live) < 6*6 {
		t.Fatalf("the live store holds %d entries: the runs were not applied", len(live))
	}
	for k, v := range live {
		if w, ok := replayed[k]; !ok {
			t.Errorf("%q: live only", k)
		} else if v != w {
			t.Errorf("%q:\nlive     %q\nreplayed %q", k, v, w)
		}
	}
	for k := range replayed {
		if _, ok := live[k]; !ok {
			t.Errorf("%q: replayed only", k)
		}
	}
	var got Task
	must(t, r.db.View(func(txn *badger.Txn) error { return get(txn, taskKey("plain"), &got) }))
	if got.Pipeline != "chain10" || got.Status != StatusCompleted || !slices.Equal(got.Tags, []string{"a", "b"}) {
		t.Errorf("the plain task is %+v", got)
	}
}

// writeSumsStore writes journaled runs (in one apply transaction and
// write by write), a mix of tasks written directly, and later writes to
// the runs (a reward, another execution, spans), with the summaries as
// layout 7 wrote them (each execution and its calls in entries of their
// own) or as layout 8 does, and marks the store with the layout.
func writeSumsStore(t *testing.T, dir string, layout int) {
	t.Helper()
	defer func(v, f bool) { holdSums, foldParts = v, f }(holdSums, foldParts)
	holdSums, foldParts = layout >= 8, layout >= 9
	holdJournal(t)
	ctx := context.Background()
	s, err := Open(ctx, dir, testConfig())
	must(t, err)
	for i := range 3 {
		chainRun(t, s, fmt.Sprintf("run-%02d", i), nil)
	}
	must(t, s.Sync())
	chainRun(t, s, "run-split", func() { must(t, s.Sync()) })
	writeMix(t, s)
	must(t, s.AddReward(ctx, &Reward{Task: "run-00", Value: 0.5}))
	must(t, s.AppendSpans(ctx, []Span{callSpan("run-01", "run-01-e1", 3, 40, 2, 0.75)}))
	must(t, s.SetTaskStatus(ctx, "run-02", StatusFailed))
	must(t, s.Sync())
	meta, err := s.encode(storeMeta{Layout: layout})
	must(t, err)
	must(t, s.db.Update(func(txn *badger.Txn) error { return txn.Set([]byte(keyMeta), meta) }))
	must(t, s.Close())
}

// TestLayout7ReadsAsLayout8: a store written as layout 7 wrote summaries
// reads as one written now, through summaries, trees and the export,
// with more summary entries; a writer marks it layout 8, and it keeps
// reading right as the writer writes on.
func TestLayout7ReadsAsLayout8(t *testing.T) {
	ctx := context.Background()
	dir7, dir8 := filepath.Join(t.TempDir(), "7"), filepath.Join(t.TempDir(), "8")
	writeSumsStore(t, dir7, 7)
	writeSumsStore(t, dir8, 8)
	read := func(s *Store) string {
		var b strings.Builder
		for _, ts := range summaries(t, s, Query{}) {
			fmt.Fprintf(&b, "%+v\n", ts)
		}
		for _, id := range []string{"run-00", "run-01", "run-split", "m0"} {
			tr, err := s.Tree(ctx, id)
			must(t, err)
			js, err := json.Marshal(tr)
			must(t, err)
			fmt.Fprintf(&b, "%s\n", js)
		}
		_, err := s.Export(ctx, &b, ExportOptions{})
		must(t, err)
		return b.String()
	}
	var reads [2]string
	var sums [2]int
	for i, dir := range []string{dir7, dir8} {
		s, err := Open(ctx, dir, testConfig().WithReadOnly(true))
		must(t, err)
		reads[i] = read(s)
		for k, n := range entryCounts(t, s) {
			if strings.HasPrefix(k, pSum) {
				sums[i] += n
			}
		}
		must(t, s.Close())
	}
	if reads[0] != reads[1] {
		t.Fatalf("layout 7 reads as\n%s\nlayout 8 as\n%s", reads[0], reads[1])
	}
	if !strings.Contains(reads[0], "run-01-e1 Mode: Ended:true") || sums[0] <= sums[1] {
		t.Fatalf("summary entries: %d in layout 7, %d in layout 8; reads\n%s", sums[0], sums[1], reads[0])
	}
	s, err := Open(ctx, dir7, testConfig())
	must(t, err)
	defer s.Close()
	var m storeMeta
	must(t, s.db.View(func(txn *badger.Txn) error { return get(txn, []byte(keyMeta), &m) }))
	if m.Layout != layoutVersion {
		t.Fatalf("layout %d after a writer opened a layout-7 store, want %d", m.Layout, layoutVersion)
	}
	chainRun(t, s, "run-new", nil)
	must(t, s.AddReward(ctx, &Reward{Task: "run-01", Value: 1}))
	must(t, s.SetTaskStatus(ctx, "run-00", StatusWaiting))
	must(t, s.Sync())
	checkDerived(t, s)
}

// TestApplyLayout7Begin: a Begin record as layout 7 journaled it, with
// x/sat/<task> (where its summary is), which a store migrated at Open
// replays from the journal the older sextant left, applies without that
// key: layout 8 keeps none, and no later migration would drop it.
func TestApplyLayout7Begin(t *testing.T) {
	holdJournal(t)
	ctx := context.Background()
	s := openTest(t)
	task := &Task{ID: "g", Pipeline: "chain10", Input: json.RawMessage(`{"topic":"x"}`)}
	must(t, s.Begin(ctx, task, &Execution{ID: "g-e1", Mode: "live"}, &Checkpoint{State: []byte(`{"step":0}`)}))
	s.jr.mu.Lock()
	r := s.jr.recs[len(s.jr.recs)-1]
	if !r.begins || r.task != "g" {
		s.jr.mu.Unlock()
		t.Fatalf("the last record pending is not g's Begin: %+v", r)
	}
	r.kvs = append(slices.Clip(r.kvs), kv{[]byte(pSumAt + "g"), strconv.AppendUint([]byte{schemaVersion}, invTime(task.Created), 10)})
	s.jr.mu.Unlock()
	must(t, s.Sync())
	for k := range derivedKeys(t, s) {
		if strings.HasPrefix(k, pSumAt) {
			t.Errorf("layout 7's key %q applied", k)
		}
	}
	checkDerived(t, s)
}
