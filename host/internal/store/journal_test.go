package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/sextant-dev/sextant/host/internal/failpoint"
)

// holdJournal keeps the journal from being applied in the background for
// the test: only a read, a write that settles it, or Close apply it.
func holdJournal(t *testing.T) {
	testNoApplyLoop = true
	t.Cleanup(func() { testNoApplyLoop = false })
}

// crashImage copies the store directory as it is on disk now: what a
// process killed at this moment leaves (its files' contents are the page
// cache's, which a kill does not lose).
func crashImage(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			if rel == snapshotDirName {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// journalRun begins a task and journals steps checkpoints, each with a
// span, and a recording for each; it returns the task id.
func journalRun(t *testing.T, s *Store, id string, steps int) {
	t.Helper()
	ctx := context.Background()
	task := &Task{ID: id, Pipeline: "p", Tags: []string{"t"}, Input: json.RawMessage(`{}`)}
	ex := &Execution{ID: id + "-e1"}
	must(t, s.Begin(ctx, task, ex, &Checkpoint{State: []byte(`{"step":0}`)}))
	for n := 1; n <= steps; n++ {
		journalStep(t, s, id, n)
	}
}

func journalStep(t *testing.T, s *Store, id string, n int) {
	t.Helper()
	ctx := context.Background()
	must(t, s.PutRecording(ctx, &Recording{Hash: fmt.Sprintf("%s-r%d", id, n), Kind: RecordChat, Task: id,
		Request: json.RawMessage(`{}`), Response: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n))}))
	sp := Span{Task: id, Execution: id + "-e1", Name: fmt.Sprintf("step %d", n), Start: t0, End: t0}
	must(t, s.Checkpoint(ctx, &Checkpoint{Task: id, Execution: id + "-e1", Step: uint64(n), State: []byte(fmt.Sprintf(`{"step":%d}`, n))}, sp))
}

// checkSteps checks that the store holds the task's first n steps:
// checkpoint, spans and recordings.
func checkSteps(t *testing.T, s *Store, id string, n int) {
	t.Helper()
	ctx := context.Background()
	tree, err := s.Tree(ctx, id)
	must(t, err)
	if len(tree.Executions) != 1 || tree.Executions[0].Checkpoint == nil {
		t.Fatalf("%s: tree %+v", id, tree)
	}
	e := tree.Executions[0]
	if e.Checkpoint.Step != uint64(n) || len(e.Spans) != n {
		t.Fatalf("%s: checkpoint at step %d with %d spans, want %d and %d", id, e.Checkpoint.Step, len(e.Spans), n, n)
	}
	for i, sp := range e.Spans {
		if sp.Seq != uint64(i+1) || sp.Name != fmt.Sprintf("step %d", i+1) {
			t.Fatalf("%s: span %d is %d %q", id, i, sp.Seq, sp.Name)
		}
	}
	for k := 1; k <= n+1; k++ {
		_, err := s.Recording(ctx, fmt.Sprintf("%s-r%d", id, k))
		if (err == nil) != (k <= n) {
			t.Fatalf("%s: recording %d: %v", id, k, err)
		}
	}
}

// TestJournalCrashAtFailpoints takes the store as a kill at each
// checkpoint failpoint leaves it, with and without fsync, and opens it,
// for writing and read-only: a checkpoint killed before its journal write
// is not there; one killed after it is, with its spans and recordings,
// and the journal is gone once applied.
func TestJournalCrashAtFailpoints(t *testing.T) {
	holdJournal(t)
	for _, fsync := range []bool{false, true} {
		for _, point := range []string{failpoint.CheckpointCommit, failpoint.CheckpointCommitted, failpoint.CheckpointSynced} {
			for _, ro := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/fsync=%t/read-only=%t", point, fsync, ro), func(t *testing.T) {
					dir := filepath.Join(t.TempDir(), ".sextant")
					image := filepath.Join(t.TempDir(), "image")
					s, err := Open(context.Background(), dir, testConfig().WithSyncCheckpoints(fsync))
					must(t, err)
					journalRun(t, s, "crash", 3)
					var once sync.Once
					setTestHook(func(p string) {
						if p == point {
							once.Do(func() { crashImage(t, dir, image) })
						}
					})
					journalStep(t, s, "crash", 4)
					setTestHook(nil)
					must(t, s.Close())
					if !hasJournal(image) {
						t.Fatal("the crash image holds no journal: the test tests nothing")
					}

					want := 4
					if point == failpoint.CheckpointCommit {
						want = 3
					}
					c, err := Open(context.Background(), image, testConfig().WithReadOnly(ro))
					must(t, err)
					defer c.Close()
					if hasJournal(image) {
						t.Error("the journal is still there after the open applied it")
					}
					checkStepsRecorded(t, c, "crash", want)
				})
			}
		}
	}
}

// checkStepsRecorded is checkSteps for a crash at step 4, whose
// recording is written before the checkpoint: it is there either way.
func checkStepsRecorded(t *testing.T, s *Store, id string, n int) {
	t.Helper()
	if n == 3 {
		if _, err := s.Recording(context.Background(), id+"-r4"); err != nil {
			t.Fatalf("the recording written before the crash: %v", err)
		}
		tree, err := s.Tree(context.Background(), id)
		must(t, err)
		if e := tree.Executions[0]; e.Checkpoint.Step != 3 || len(e.Spans) != 3 {
			t.Fatalf("checkpoint at step %d with %d spans, want 3 and 3", e.Checkpoint.Step, len(e.Spans))
		}
		return
	}
	checkSteps(t, s, id, n)
}

// TestJournalAppliedNotDeleted crashes after the applier committed to
// Badger but before it deleted the segment: the reopened store skips the
// records Badger holds (keyJournal) and applies the rest once.
func TestJournalAppliedNotDeleted(t *testing.T) {
	holdJournal(t)
	dir := filepath.Join(t.TempDir(), ".sextant")
	image := filepath.Join(t.TempDir(), "image")
	s, err := Open(context.Background(), dir, testConfig())
	must(t, err)
	journalRun(t, s, "twice", 3)
	var once sync.Once
	setTestHook(func(p string) {
		if p == "journal-applied" {
			once.Do(func() { crashImage(t, dir, image) })
		}
	})
	checkSteps(t, s, "twice", 3) // settles: applies the journal
	setTestHook(nil)
	must(t, s.Close())
	if !hasJournal(image) {
		t.Fatal("the crash image holds no journal")
	}
	c, err := Open(context.Background(), image, testConfig())
	must(t, err)
	defer c.Close()
	mark, err := c.journalMark()
	must(t, err)
	if mark != 7 { // Begin, three recordings and three checkpoints
		t.Errorf("mark %d, want 7", mark)
	}
	checkSteps(t, c, "twice", 3)
	journalStep(t, c, "twice", 4)
	checkSteps(t, c, "twice", 4)
}

// lastSegment is the path of the image's last journal segment.
func lastSegment(t *testing.T, dir string) string {
	t.Helper()
	segs, err := journalSegments(filepath.Join(dir, journalDirName))
	must(t, err)
	if len(segs) == 0 {
		t.Fatal("no journal segment")
	}
	return filepath.Join(dir, journalDirName, segName(segs[len(segs)-1]))
}

// crashAfter journals three steps and a fourth, then returns the image
// taken after the fourth's journal write.
func crashAfter(t *testing.T) string {
	t.Helper()
	holdJournal(t)
	dir := filepath.Join(t.TempDir(), ".sextant")
	image := filepath.Join(t.TempDir(), "image")
	s, err := Open(context.Background(), dir, testConfig())
	must(t, err)
	journalRun(t, s, "cut", 4)
	crashImage(t, dir, image)
	must(t, s.Close())
	return image
}

// recordsEnd returns where the last record of a segment's bytes starts
// and where the records end.
func recordsEnd(b []byte) (last, end int) {
	end = journalSegHeader
	for end+journalHeader <= len(b) {
		n := int(binary.LittleEndian.Uint32(b[end:]))
		if n == 0 {
			break
		}
		last, end = end, end+journalHeader+n
	}
	return last, end
}

// TestJournalTornTail leaves the last record as a kill while it is
// being encoded, or a power loss before its sync, leaves it: its last
// bytes still the segment's zeros, or its header not filled in yet. The
// steps before it are there, the store opens, and nothing is kept aside.
func TestJournalTornTail(t *testing.T) {
	for name, cut := range map[string]func(b []byte, last, end int){
		"payload": func(b []byte, last, end int) { clear(b[end-5 : end]) },
		"header":  func(b []byte, last, end int) { clear(b[last : last+journalHeader]) },
	} {
		t.Run(name, func(t *testing.T) {
			image := crashAfter(t)
			seg := lastSegment(t, image)
			b, err := os.ReadFile(seg)
			must(t, err)
			last, end := recordsEnd(b)
			if end == 0 || !allZero(b[end:]) {
				t.Fatalf("the segment's records end at %d of %d, then not zeros", end, len(b))
			}
			cut(b, last, end)
			must(t, os.WriteFile(seg, b, 0o644))
			var log bytes.Buffer
			c, err := Open(context.Background(), image, testConfig().WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
			must(t, err)
			defer c.Close()
			checkStepsRecorded(t, c, "cut", 3)
			if !strings.Contains(log.String(), "cut short") {
				t.Errorf("the torn tail is not reported:\n%s", log.String())
			}
			if bad, _ := badSegments(filepath.Join(image, journalDirName)); bad != 0 {
				t.Error("a torn tail was kept aside as damage")
			}
		})
	}
}

// TestJournalCorruptRecord damages a record in the middle of the
// journal: the records before it are applied, those from it on are not
// (the order of writes is kept), the damage is reported, and the segment
// is kept aside as evidence.
func TestJournalCorruptRecord(t *testing.T) {
	image := crashAfter(t)
	seg := lastSegment(t, image)
	b, err := os.ReadFile(seg)
	must(t, err)
	// Records: Begin, recording 1, checkpoint 1, recording 2, …; damage
	// the fourth record's payload (recording 2).
	off := journalSegHeader
	for range 3 {
		off += journalHeader + int(uint32(b[off])|uint32(b[off+1])<<8|uint32(b[off+2])<<16|uint32(b[off+3])<<24)
	}
	b[off+journalHeader+2] ^= 0xff
	must(t, os.WriteFile(seg, b, 0o644))
	var log bytes.Buffer
	c, err := Open(context.Background(), image, testConfig().WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	must(t, err)
	defer c.Close()
	checkSteps(t, c, "cut", 1)
	if !strings.Contains(log.String(), "damaged") || !strings.Contains(log.String(), "level=WARN") {
		t.Errorf("the damage is not reported:\n%s", log.String())
	}
	if bad, _ := badSegments(filepath.Join(image, journalDirName)); bad == 0 {
		t.Error("the damaged segment was not kept aside")
	}
}

// TestJournalReadYourWrites reads, with the journal unapplied (Begin's
// record too), through every read API a run's data reaches: each sees
// the journaled writes.
func TestJournalReadYourWrites(t *testing.T) {
	holdJournal(t)
	ctx := context.Background()
	// fresh journals a run of two steps that ends, into a new store, and
	// checks that it is all pending.
	fresh := func(t *testing.T) *Store {
		s := openTest(t)
		journalRun(t, s, "ryw", 2)
		sp := Span{Task: "ryw", Execution: "ryw-e1", Seq: 100, Name: "run", Start: t0, End: t0}
		must(t, s.FinishExecution(ctx, &Checkpoint{Task: "ryw", Execution: "ryw-e1", Step: 3, State: []byte(`{}`)},
			func(e *Execution) { e.Status, e.Ended = StatusCompleted, t0.Add(time.Second) }, StatusCompleted, sp))
		if s.jr.pending.Load() != 6 { // Begin, two recordings, three checkpoints
			t.Fatalf("%d records pending, want 6: the read below tests nothing", s.jr.pending.Load())
		}
		return s
	}
	t.Run("Recording", func(t *testing.T) {
		s := fresh(t)
		if r, err := s.Recording(ctx, "ryw-r2"); err != nil || string(r.Response) != `{"n":2}` {
			t.Fatalf("recording from the journal: %v %+v", err, r)
		}
		if s.jr.pending.Load() == 0 {
			t.Error("Recording applied the journal: it is to read the overlay")
		}
	})
	for name, read := range map[string]func(s *Store) error{
		"Execution": func(s *Store) error {
			e, err := s.Execution(ctx, "ryw", "ryw-e1")
			if err == nil && e.Status != StatusCompleted {
				err = fmt.Errorf("status %s", e.Status)
			}
			return err
		},
		"LatestCheckpoint": func(s *Store) error {
			c, err := s.LatestCheckpoint(ctx, "ryw", "ryw-e1")
			if err == nil && c.Step != 3 {
				err = fmt.Errorf("step %d", c.Step)
			}
			return err
		},
		"Spans": func(s *Store) error {
			sp, err := s.Spans(ctx, "ryw", "ryw-e1")
			if err == nil && len(sp) != 3 {
				err = fmt.Errorf("%d spans", len(sp))
			}
			return err
		},
		"Task": func(s *Store) error {
			task, err := s.Task(ctx, "ryw")
			if err == nil && task.Status != StatusCompleted {
				err = fmt.Errorf("status %s", task.Status)
			}
			return err
		},
		"Tasks by status": func(s *Store) error {
			ts, err := s.Tasks(ctx, Query{Status: StatusCompleted})
			if err == nil && (len(ts) != 1 || ts[0].ID != "ryw") {
				err = fmt.Errorf("%d tasks", len(ts))
			}
			return err
		},
		"Tasks by pipeline, tag and time": func(s *Store) error {
			for _, q := range []Query{{Pipeline: "p"}, {Tag: "t"}, {Since: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), Until: time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)}, {Pipeline: "p", Status: StatusCompleted}} {
				ts, err := s.Tasks(ctx, q)
				if err == nil && (len(ts) != 1 || ts[0].ID != "ryw") {
					err = fmt.Errorf("%d tasks", len(ts))
				}
				if err != nil {
					return fmt.Errorf("%+v: %w", q, err)
				}
			}
			return nil
		},
		"Summary": func(s *Store) error {
			n := 0
			err := s.EachSummary(ctx, Query{}, func(ts *TaskSummary) error {
				if n++; ts.ID != "ryw" || ts.Status != StatusCompleted || len(ts.Executions) != 1 || !ts.Executions[0].Ended {
					return fmt.Errorf("summary %+v", ts)
				}
				return nil
			})
			if err == nil && n != 1 {
				err = fmt.Errorf("%d summaries", n)
			}
			return err
		},
		"Tree": func(s *Store) error {
			tree, err := s.Tree(ctx, "ryw")
			if err == nil && (len(tree.Executions) != 1 || tree.Executions[0].Execution.Status != StatusCompleted || len(tree.Executions[0].Spans) != 3) {
				err = fmt.Errorf("executions %+v", tree.Executions)
			}
			return err
		},
		"Export": func(s *Store) error {
			var b bytes.Buffer
			n, err := s.Export(ctx, &b, ExportOptions{})
			if err == nil && (n.Spans != 3 || n.Recordings != 2) {
				err = fmt.Errorf("exported %+v", n)
			}
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			if err := read(fresh(t)); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestJournalConcurrentRunsReplay journals the steps of many runs at
// once and replays them from a crash image: every run's steps are there.
func TestJournalConcurrentRunsReplay(t *testing.T) {
	holdJournal(t)
	dir := filepath.Join(t.TempDir(), ".sextant")
	image := filepath.Join(t.TempDir(), "image")
	s, err := Open(context.Background(), dir, testConfig().WithSyncCheckpoints(true))
	must(t, err)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() { journalRun(t, s, fmt.Sprintf("run-%d", w), 5) })
	}
	wg.Wait()
	crashImage(t, dir, image)
	must(t, s.Close())
	c, err := Open(context.Background(), image, testConfig().WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	must(t, err)
	defer c.Close()
	for w := range 8 {
		checkSteps(t, c, fmt.Sprintf("run-%d", w), 5)
	}
}

// TestJournalMergesSpans applies a run's journaled steps in one
// transaction: its spans become one entry, read back in order, and its
// checkpoint is the last one.
func TestJournalMergesSpans(t *testing.T) {
	holdJournal(t)
	s := openTest(t)
	journalRun(t, s, "merge", 5)
	must(t, s.Sync())
	entries := 0
	must(t, s.scan(context.Background(), spanPrefix("merge", "merge-e1"), func(key, val []byte) error {
		entries++
		return nil
	}))
	if entries != 1 {
		t.Errorf("%d span entries, want 1", entries)
	}
	checkSteps(t, s, "merge", 5)
	journalStep(t, s, "merge", 6) // a later burst: an entry of its own
	checkSteps(t, s, "merge", 6)
}

// TestJournalMergesUsage applies a run's journaled calls in one
// transaction: their usage becomes one entry, and a call written again
// alone keeps the others of that entry.
func TestJournalMergesUsage(t *testing.T) {
	holdJournal(t)
	s := openTest(t)
	ctx := context.Background()
	const id, ex = "use", "use-e1"
	must(t, s.Begin(ctx, &Task{ID: id, Pipeline: "p", Input: json.RawMessage(`{}`)}, &Execution{ID: ex},
		&Checkpoint{State: []byte(`{"step":0}`)}))
	for n := 1; n <= 5; n++ {
		must(t, s.Checkpoint(ctx, &Checkpoint{Task: id, Execution: ex, Step: uint64(n), State: []byte(`{}`)},
			callSpan(id, ex, 0, int64(n), 1, 0.5)))
	}
	must(t, s.Sync())
	// The calls of the task's first transaction are in its summary entry.
	entries := 0
	must(t, s.scan(ctx, []byte(pSum), func(key, val []byte) error {
		entries++
		return nil
	}))
	if entries != 1 {
		t.Errorf("%d summary entries, want 1", entries)
	}
	calls := func() []CallUsage {
		t.Helper()
		var got []CallUsage
		must(t, s.EachSummary(ctx, Query{}, func(ts *TaskSummary) error {
			for _, es := range ts.Executions {
				got = append(got, es.Calls...)
			}
			return nil
		}))
		return got
	}
	want := []CallUsage{{1, 2, 0.5}, {2, 3, 0.5}, {3, 4, 0.5}, {4, 5, 0.5}, {5, 6, 0.5}}
	if got := calls(); !slices.Equal(got, want) {
		t.Fatalf("calls %v, want %v", got, want)
	}
	// The first call written again, alone: its entry's key is the merged one's.
	must(t, s.AppendSpans(ctx, []Span{callSpan(id, ex, 1, 10, 10, 1)}))
	want[0] = CallUsage{1, 20, 1}
	if got := calls(); !slices.Equal(got, want) {
		t.Errorf("after a rewrite, calls %v, want %v", got, want)
	}
	// Two more calls merged, and the first of them journaled again alone
	// before they are applied.
	for n := 6; n <= 7; n++ {
		must(t, s.Checkpoint(ctx, &Checkpoint{Task: id, Execution: ex, Step: uint64(n), State: []byte(`{}`)},
			callSpan(id, ex, 0, int64(n), 1, 0.5)))
	}
	must(t, s.Checkpoint(ctx, &Checkpoint{Task: id, Execution: ex, Step: 8, State: []byte(`{}`)}, callSpan(id, ex, 6, 30, 0, 2)))
	must(t, s.Sync())
	want = append(want, CallUsage{6, 30, 2}, CallUsage{7, 8, 0.5})
	if got := calls(); !slices.Equal(got, want) {
		t.Errorf("after a journaled rewrite, calls %v, want %v", got, want)
	}
}

// TestJournalBegin journals a Begin whose task has usage staged before
// it: a second creation of the id sees the pending one, and a replay from
// a crash image writes what applying it live writes, the staged usage
// adopted beneath the task's summary.
func TestJournalBegin(t *testing.T) {
	holdJournal(t)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), ".sextant")
	image := filepath.Join(t.TempDir(), "image")
	s, err := Open(ctx, dir, testConfig())
	must(t, err)
	must(t, s.StageSpans(ctx, []Span{callSpan("b1", "b1-e1", 1, 10, 2, 0.25)}))
	task := &Task{ID: "b1", Pipeline: "p", Tags: []string{"x", "y"}, Input: json.RawMessage(`{"a":1}`)}
	must(t, s.Begin(ctx, task, &Execution{ID: "b1-e1"}, &Checkpoint{State: []byte(`{}`)}))
	if s.jr.pending.Load() != 1 {
		t.Fatalf("%d records pending, want Begin's", s.jr.pending.Load())
	}
	if err := s.Begin(ctx, &Task{ID: "b1", Pipeline: "p"}, &Execution{}, &Checkpoint{}); !errors.Is(err, ErrExists) {
		t.Errorf("a second Begin of a pending task: %v, want ErrExists", err)
	}
	if s.jr.pending.Load() != 1 {
		t.Fatal("the second Begin applied the journal: it is to see the pending one")
	}
	crashImage(t, dir, image)
	if err := s.CreateTask(ctx, &Task{ID: "b1", Pipeline: "p"}); !errors.Is(err, ErrExists) {
		t.Errorf("CreateTask of a pending task: %v, want ErrExists", err)
	}
	live := storeKeys(t, s)
	must(t, s.Close())
	c, err := Open(ctx, image, testConfig())
	must(t, err)
	defer c.Close()
	if got := storeKeys(t, c); !maps.Equal(got, live) {
		t.Errorf("replayed keys differ from those applied live:\n%v\n%v", got, live)
	}
	checkDerived(t, c)
	var calls []CallUsage
	must(t, c.EachSummary(ctx, Query{Tag: "y"}, func(ts *TaskSummary) error {
		for _, es := range ts.Executions {
			calls = append(calls, es.Calls...)
		}
		return nil
	}))
	if want := []CallUsage{{1, 12, 0.25}}; !slices.Equal(calls, want) {
		t.Errorf("calls %v, want %v", calls, want)
	}
}

// storeKeys returns every key and value of a store but its marks (m/).
func storeKeys(t *testing.T, s *Store) map[string]string {
	t.Helper()
	must(t, s.Sync())
	out := map[string]string{}
	must(t, s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.DefaultIteratorOptions)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			k := string(it.Item().Key())
			if strings.HasPrefix(k, "m/") {
				continue
			}
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			out[k] = string(v)
		}
		return nil
	}))
	return out
}

// TestBeginLooksAgain: Begin looks for its task in Badger before it takes
// any lock. A task that arrives after that look — created by CreateTask,
// an import or a call the recording proxy records (RecordCall), begun by
// another Begin and still pending, or begun and then applied and dropped
// by the applier — is found, not begun twice.
func TestBeginLooksAgain(t *testing.T) {
	holdJournal(t)
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), ".sextant"), testConfig())
	must(t, err)
	defer s.Close()
	for _, c := range []struct {
		id      string
		between func()
	}{
		{"created", func() { must(t, s.CreateTask(ctx, &Task{ID: "created", Pipeline: "p"})) }},
		{"imported", func() {
			other, err := Open(ctx, filepath.Join(t.TempDir(), ".sextant"), testConfig())
			must(t, err)
			must(t, other.CreateTask(ctx, &Task{ID: "imported", Pipeline: "p"}))
			var export bytes.Buffer
			_, err = other.Export(ctx, &export, ExportOptions{})
			must(t, err)
			must(t, other.Close())
			_, err = s.Import(ctx, &export, "export")
			must(t, err)
		}},
		{"recorded", func() { // the recording proxy's call creates it
			must(t, s.RecordCall(ctx, &Call{Task: &Task{ID: "recorded", Pipeline: "proxy"}, Execution: &Execution{ID: "recorded-e1"}}))
		}},
		{"pending", func() {
			must(t, s.Begin(ctx, &Task{ID: "pending", Pipeline: "p"}, &Execution{ID: "pending-e1"}, &Checkpoint{State: []byte(`{}`)}))
		}},
		{"applied", func() {
			must(t, s.Begin(ctx, &Task{ID: "applied", Pipeline: "p"}, &Execution{ID: "applied-e1"}, &Checkpoint{State: []byte(`{}`)}))
			must(t, s.applyPending())
			if s.jr.hasTask("applied") {
				t.Fatal("the other Begin is still pending: the case needs it applied and dropped")
			}
		}},
	} {
		done := false // the hook runs on the test's goroutine only
		setTestHook(func(point string) {
			if point == "begin-looked" && !done {
				done = true // the first Begin to pass; the nested one passes by
				c.between()
			}
		})
		err := s.Begin(ctx, &Task{ID: c.id, Pipeline: "p"}, &Execution{ID: c.id + "-e2"}, &Checkpoint{State: []byte(`{}`)})
		setTestHook(nil)
		if !errors.Is(err, ErrExists) {
			t.Errorf("%s: Begin of a task that arrived after its look in Badger: %v, want ErrExists", c.id, err)
		}
	}
}
