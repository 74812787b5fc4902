package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// writeFoldStore writes runs whose last checkpoint and links an apply
// transaction folds into their execution's record (writeLinksStore's
// tasks a and b, whose links go on in later transactions, and chained
// runs, one written write by write), then later writes to them: a
// checkpoint of its own, an execution rewritten directly and by a
// journaled checkpoint, a link in a later transaction. It writes them as
// layout 8 did (t/k and t/h entries) or as layout 9 does, and marks the
// store with the layout.
func writeFoldStore(t *testing.T, dir string, layout int) {
	t.Helper()
	writeLinksStore(t, dir, layout)
	defer func(f bool) { foldParts = f }(foldParts)
	foldParts = layout >= 9
	ctx := context.Background()
	s, err := Open(ctx, dir, testConfig())
	must(t, err)
	for i := range 3 {
		chainRun(t, s, fmt.Sprintf("run-%02d", i), nil)
	}
	// The same call made by two runs in one transaction: the last write
	// of the recording is run-01's.
	must(t, s.PutRecording(ctx, &Recording{Hash: "run-00-r1", Kind: RecordChat, Task: "run-01",
		Request: json.RawMessage(`{}`), Response: json.RawMessage(`{"by":"run-01"}`)}))
	must(t, s.Sync())
	chainRun(t, s, "run-split", func() { must(t, s.Sync()) })
	// A recording written again later has its entry whole again.
	must(t, s.PutRecording(ctx, &Recording{Hash: "run-00-r3", Kind: RecordChat, Task: "run-00",
		Request: json.RawMessage(`{}`), Response: json.RawMessage(`{"again":true}`)}))
	must(t, s.Checkpoint(ctx, &Checkpoint{Task: "run-00", Execution: "run-00-e1", Step: 11, State: []byte(`{"step":11}`)}))
	must(t, s.Sync())
	ex, err := s.Execution(ctx, "run-01", "run-01-e1")
	must(t, err)
	ex.Error = "noted later"
	must(t, s.PutExecution(ctx, ex))
	must(t, s.CheckpointExecution(ctx, &Checkpoint{Task: "run-02", Execution: "run-02-e1", Step: 12, State: []byte(`{"step":12}`)},
		func(e *Execution) { e.Error = "checkpointed later" }))
	must(t, s.PutRecording(ctx, &Recording{Hash: "run-02-r11", Kind: RecordChat, Task: "run-02",
		Request: json.RawMessage(`{}`), Response: json.RawMessage(`{}`)}))
	must(t, s.Sync())
	meta, err := s.encode(storeMeta{Layout: layout})
	must(t, err)
	must(t, s.db.Update(func(txn *badger.Txn) error { return txn.Set([]byte(keyMeta), meta) }))
	must(t, s.Close())
}

// foldTasks are the tasks writeFoldStore writes.
var foldTasks = []string{"a", "b", "run-00", "run-01", "run-02", "run-split"}

// readFolded is what every reader of checkpoints and links makes of the
// tasks of writeFoldStore: trees, heads, latest checkpoints, the
// recordings of the trees, the export with checkpoints, and the check.
func readFolded(t *testing.T, s *Store) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	for _, id := range foldTasks {
		tr, err := s.Tree(ctx, id)
		must(t, err)
		js, err := json.Marshal(tr)
		must(t, err)
		fmt.Fprintf(&b, "%s\n", js)
		recs, err := s.TreeRecordings(ctx, tr)
		must(t, err)
		fmt.Fprintf(&b, "%s: %d recordings read\n", id, len(recs))
		for _, r := range recs {
			st, err := s.RecordingStamp(ctx, r.Hash)
			must(t, err)
			_, st2, err := s.RecordingWithStamp(ctx, r.Hash)
			must(t, err)
			found, err := s.FindRecording(ctx, r.Hash)
			must(t, err)
			fmt.Fprintf(&b, "%s by %s: %s, stamps agree %t\n", r.Hash, found.Task, r.Response, st == st2)
		}
		for _, e := range tr.Executions {
			c, err := s.LatestCheckpoint(ctx, id, e.Execution.ID)
			if err != nil {
				fmt.Fprintf(&b, "%s: %v\n", e.Execution.ID, err)
				continue
			}
			fmt.Fprintf(&b, "%s: step %d %s\n", e.Execution.ID, c.Step, c.State)
		}
		h, err := s.Head(ctx, id)
		must(t, err)
		for _, e := range h.Executions {
			if e.Checkpoint != nil {
				fmt.Fprintf(&b, "head %s has a checkpoint\n", e.Execution.ID)
			}
		}
	}
	_, err := s.Export(ctx, &b, ExportOptions{Checkpoints: true})
	must(t, err)
	r, err := s.Check(ctx)
	must(t, err)
	fmt.Fprintf(&b, "check: %d read, %d tasks and %d keys damaged\n", r.TasksRead, len(r.Tasks), len(r.Keys))
	return b.String()
}

// TestLayout8ReadsAsLayout9: a store whose checkpoints and links have
// entries of their own (layout 8) reads exactly as one whose execution
// records hold them (layout 9), through every reader of either, with
// fewer entries; later writes (a checkpoint, an execution rewritten, a
// journaled finish, a link) keep what the records hold. The import of
// the export reads the same, and a writer marks a layout-8 store with
// the current layout and writes on.
func TestLayout8ReadsAsLayout9(t *testing.T) {
	ctx := context.Background()
	dir8, dir9 := filepath.Join(t.TempDir(), "8"), filepath.Join(t.TempDir(), "9")
	writeFoldStore(t, dir8, 8)
	writeFoldStore(t, dir9, 9)
	var reads [2]string
	var counts [2]map[string]int
	for i, dir := range []string{dir8, dir9} {
		s, err := Open(ctx, dir, testConfig().WithReadOnly(true))
		must(t, err)
		reads[i] = readFolded(t, s)
		counts[i] = entryCounts(t, s)
		must(t, s.Close())
	}
	if reads[0] != reads[1] {
		t.Fatalf("layout 8 reads as\n%s\nlayout 9 as\n%s", reads[0], reads[1])
	}
	for _, want := range []string{
		`run-00-r1 by run-01: {"by":"run-01"}`, `run-00-r3 by run-00: {"again":true}`, `run-01-r3 by run-01: {"n":3}`,
		"run-00-e1: step 11 ", "run-01-e1: step 10 ", "run-02-e1: step 12 ", "run-split-e1: step 10 ",
		`"error":"noted later"`, `"error":"checkpointed later"`, "run-02-r11", "a-e1: step 0 {}",
		"check: 6 read, 0 tasks and 0 keys damaged",
	} {
		if !strings.Contains(reads[1], want) {
			t.Errorf("the reads lack %q:\n%s", want, reads[1])
		}
	}
	if strings.Contains(reads[1], "head ") {
		t.Errorf("a head has a checkpoint:\n%s", reads[1])
	}
	k, h := pTask+string(subCheckpoint), pTask+string(subLink)
	if counts[1][k] >= counts[0][k] || counts[1][h] >= counts[0][h] {
		t.Errorf("checkpoint entries %d, link entries %d in layout 9; %d, %d in layout 8: want fewer",
			counts[1][k], counts[1][h], counts[0][k], counts[0][h])
	}
	if n8, n9 := recordingIndexes(t, dir8), recordingIndexes(t, dir9); n8 != 0 || n9 < 15 {
		t.Errorf("recordings held by execution records: %d in layout 8, %d in layout 9", n8, n9)
	}
	// The export of layout 9, imported, reads the same.
	s, err := Open(ctx, dir9, testConfig())
	must(t, err)
	var exp bytes.Buffer
	_, err = s.Export(ctx, &exp, ExportOptions{Checkpoints: true})
	must(t, err)
	must(t, s.Close())
	imp := openTest(t)
	_, err = imp.Import(ctx, &exp, "export")
	must(t, err)
	if got := readFolded(t, imp); got != reads[1] {
		t.Fatalf("imported, the store reads as\n%s\nwant\n%s", got, reads[1])
	}
	// A writer marks layout 8 with the current layout, and writes on.
	s, err = Open(ctx, dir8, testConfig())
	must(t, err)
	defer s.Close()
	var m storeMeta
	must(t, s.db.View(func(txn *badger.Txn) error { return get(txn, []byte(keyMeta), &m) }))
	if m.Layout != layoutVersion {
		t.Fatalf("layout %d after a writer opened a layout-8 store, want %d", m.Layout, layoutVersion)
	}
	if got := readFolded(t, s); got != reads[0] {
		t.Fatalf("opened by a writer, layout 8 reads as\n%s\nwant\n%s", got, reads[0])
	}
	chainRun(t, s, "run-new", nil)
	must(t, s.Sync())
	for _, id := range []string{"run-split", "run-new"} {
		checkChainRun(t, s, id)
	}
	checkDerived(t, s)
}

// recordingIndexes counts the recording entries that name the execution
// record holding their recording, each below Badger's value threshold.
func recordingIndexes(t *testing.T, dir string) int {
	t.Helper()
	s, err := Open(context.Background(), dir, testConfig().WithReadOnly(true))
	must(t, err)
	defer s.Close()
	n := 0
	for k, v := range storeKeys(t, s) {
		if strings.HasPrefix(k, pRec) && len(v) > 1 && v[1] == '"' {
			if len(v) >= valueThreshold {
				t.Errorf("%s: %d bytes, over the value threshold", k, len(v))
			}
			n++
		}
	}
	return n
}

// TestFoldedDamage: an execution record whose folded parts do not decode
// (or name a bad hash) is damage of its task, which every reader of the
// task reports, not a panic or a silent loss.
func TestFoldedDamage(t *testing.T) {
	holdJournal(t)
	ctx := context.Background()
	for _, c := range []struct {
		tail  string
		check bool // Check reads it as damage too (it decodes no checkpoint)
	}{
		{`,"checkpoint":{"step":"x"}}`, false},
		{`,"checkpoint":{]}`, true},
		{`,"links":["a/b"]}`, true},
		{`,"links":[1]}`, true},
		{`,"recordings":{"r-r1":}}`, true},
	} {
		tail := c.tail
		s := openTest(t)
		chainRun(t, s, "r", nil)
		must(t, s.Sync())
		key := execKey("r", "r-e1")
		var val []byte
		must(t, s.db.View(func(txn *badger.Txn) error {
			it, err := txn.Get(key)
			if err != nil {
				return err
			}
			val, err = it.ValueCopy(nil)
			return err
		}))
		i := foldStart(val)
		if i < 0 {
			t.Fatalf("the record holds nothing folded: %s", val)
		}
		rawSet(t, s, string(key), append(val[:i:i], tail...))
		if _, err := s.Tree(ctx, "r"); !isDamage(err) {
			t.Errorf("%s: tree: %v, want damage", tail, err)
		}
		if _, err := s.LatestCheckpoint(ctx, "r", "r-e1"); strings.Contains(tail, "checkpoint") && !isDamage(err) {
			t.Errorf("%s: latest checkpoint: %v, want damage", tail, err)
		}
		// The recordings the record held are cut off with it.
		if _, err := s.Recording(ctx, "r-r1"); !isDamage(err) {
			t.Errorf("%s: recording: %v, want damage", tail, err)
		}
		if r, err := s.Check(ctx); err != nil || len(r.Keys) != 5 {
			t.Errorf("%s: check: %v, %+v, want the 5 recordings damaged", tail, err, r)
		}
		if r, err := s.Check(ctx); err != nil || (len(r.Tasks) == 1) != c.check {
			t.Errorf("%s: check: %v, %+v, want the task damaged", tail, err, r)
		}
	}
}

func isDamage(err error) bool {
	var d *DamageError
	return errors.As(err, &d)
}

// TestFoldCrashMidApply: a store killed inside an apply transaction,
// its entries set but not committed, replays the journal at the next
// Open into the entries the live store committed, folded records
// included, and reads whole.
func TestFoldCrashMidApply(t *testing.T) {
	holdJournal(t)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), ".sextant")
	image := filepath.Join(t.TempDir(), "image")
	s, err := Open(ctx, dir, testConfig())
	must(t, err)
	for i := range 3 {
		chainRun(t, s, fmt.Sprintf("run-%02d", i), nil)
	}
	var once sync.Once
	setTestHook(func(point string) {
		if point == "apply-flushed" {
			once.Do(func() { crashImage(t, dir, image) })
		}
	})
	live := storeKeys(t, s) // applies the journal (Sync)
	setTestHook(nil)
	must(t, s.Close())
	for k, v := range live {
		if strings.Contains(k, "/k/") || strings.Contains(k, "/h/") || strings.HasPrefix(k, pRec) && v[1] != '"' {
			t.Errorf("%q: the runs' checkpoints, links and recordings were not folded", k)
		}
	}
	r, err := Open(ctx, image, testConfig())
	must(t, err)
	defer r.Close()
	replayed := storeKeys(t, r)
	if len(live) == 0 || len(replayed) != len(live) {
		t.Fatalf("%d entries live, %d replayed", len(live), len(replayed))
	}
	for k, v := range live {
		if replayed[k] != v {
			t.Errorf("%q:\nlive     %q\nreplayed %q", k, v, replayed[k])
		}
	}
	for i := range 3 {
		checkChainRun(t, r, fmt.Sprintf("run-%02d", i))
	}
}

// TestTreeExecDecode: a tree reads an execution record (decodeTreeExec)
// as decodeFolded reads it — the execution, its checkpoint and links, or
// the same error — for records with folded parts, a record whose parts
// are not where appendFolded puts them (a space before one), and every
// kind of damage to them.
func TestTreeExecDecode(t *testing.T) {
	s := openTest(t)
	rng := rand.New(rand.NewPCG(7, 9))
	key := execKey("t1", "e1")
	junk := []byte{'"', '\\', ',', '}', '{', '[', ']', '0', '9', 'Z', '.', ':', ' ', 0x01, 0xff, 'n'}
	check := func(val []byte, task string) {
		t.Helper()
		var got, want folded
		gotErr, wantErr := decodeTreeExec(key, val, task, &got), decodeFolded(key, val, &want)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || gotErr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q decodes as %+v (%v), decodeFolded reads %+v (%v)", val, got, gotErr, want, wantErr)
		}
	}
	ev, err := s.encodeExecution(&Execution{Task: "t1", ID: "e1", Status: StatusRunning, TraceID: TraceIDFor("t1", "e1"), Started: t0})
	must(t, err)
	cp, err := s.encode(&Checkpoint{Task: "t1", Execution: "e1", Step: 3, State: []byte(`{}`), Updated: t0})
	must(t, err)
	spaced := bytes.Replace(appendFolded(nil, ev, cp, nil, nil, nil), []byte(`,"checkpoint"`), []byte(`, "checkpoint"`), 1)
	check(spaced, "t1")
	for range 5000 {
		e := randExecution(rng)
		ev, err := s.encodeExecution(e)
		if err != nil {
			continue
		}
		var cp []byte
		if rng.IntN(2) == 0 {
			cp, err = s.encode(&Checkpoint{Task: e.Task, Execution: e.ID, Step: uint64(rng.IntN(9)), State: []byte(randString(rng)), Updated: t0})
			must(t, err)
		}
		var links []string
		for range rng.IntN(3) {
			links = append(links, fmt.Sprintf("%064x", rng.Uint64()))
		}
		var tail []byte
		if rng.IntN(3) == 0 {
			tail = []byte(`,"recordings":{"` + fmt.Sprintf("%064x", rng.Uint64()) + `":{"hash":"x"}}`)
		}
		val := appendFolded(nil, ev, cp, links, nil, tail)
		check(val, e.Task)
		check(val, "other")
		for range 6 {
			v := bytes.Clone(val)
			i := 1 + rng.IntN(len(v)-1)
			switch rng.IntN(3) {
			case 0:
				v = append(v[:i], v[i+1:]...)
			case 1:
				v = append(v[:i], append([]byte{junk[rng.IntN(len(junk))]}, v[i:]...)...)
			default:
				v[i] = junk[rng.IntN(len(junk))]
			}
			check(v, e.Task)
		}
	}
}
