package store

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// checkRun opens the store read-only beside the helper's run and checks
// that what it reads is one committed state: the checkpoint, its state and
// the spans written with it agree. It returns the step read.
func checkRun(t *testing.T, dir string) uint64 {
	t.Helper()
	ctx := context.Background()
	r, err := Open(ctx, dir, testConfig().WithReadOnly(true))
	must(t, err)
	defer func() { must(t, r.Close()) }()
	c, err := r.LatestCheckpoint(ctx, "crash", "e1")
	if errors.Is(err, ErrNotFound) {
		return 0
	}
	must(t, err)
	var state map[string]uint64
	must(t, json.Unmarshal(c.State, &state))
	spans, err := r.Spans(ctx, "crash", "e1")
	must(t, err)
	if state["step"] != c.Step || uint64(len(spans)) != c.Step {
		t.Fatalf("checkpoint step %d, state %v, %d spans: not one committed state", c.Step, state, len(spans))
	}
	return c.Step
}

// checkBusy is checkRun for the "busy" writer, whose one span carries
// the step of the checkpoint committed with it.
func checkBusy(t *testing.T, dir string) uint64 {
	t.Helper()
	ctx := context.Background()
	r, err := Open(ctx, dir, testConfig().WithReadOnly(true))
	must(t, err)
	defer func() { must(t, r.Close()) }()
	c, err := r.LatestCheckpoint(ctx, "crash", "e1")
	if errors.Is(err, ErrNotFound) {
		return 0
	}
	must(t, err)
	var state map[string]uint64
	must(t, json.Unmarshal(c.State, &state))
	spans, err := r.Spans(ctx, "crash", "e1")
	must(t, err)
	if state["step"] != c.Step || len(spans) != 1 || spans[0].Attributes["step"].Int() != int64(c.Step) {
		t.Fatalf("checkpoint step %d, state %v, spans %+v: not one committed state", c.Step, state, spans)
	}
	return c.Step
}

// TestReadersBesideWriter is `runs` beside `run`, 50 times, without
// timing: the writer (another process) commits one step when told, and a
// reader opened after "step k" must read exactly step k, while the writer
// goes on. The writer never fails and closes cleanly.
func TestReadersBesideWriter(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".sextant")
	cmd, stdin, sc := helper(t, "steps", dir, "ready", "SEXTANT_STORE_NOSYNC=1")
	for k := uint64(1); k <= 50; k++ {
		_, err := stdin.Write([]byte("\n"))
		must(t, err)
		if !sc.Scan() || sc.Text() != fmt.Sprintf("step %d", k) {
			t.Fatalf("writer: %q, want step %d", sc.Text(), k)
		}
		if got := checkRun(t, dir); got != k {
			t.Fatalf("reader read step %d after the writer committed step %d", got, k)
		}
	}
	must(t, stdin.Close())
	must(t, cmd.Wait())
	if got := checkRun(t, dir); got != 50 {
		t.Fatalf("after the writer closed: step %d", got)
	}
	assertNoSnapshotsLeft(t, dir)
}

// TestReadersBesideBusyWriter opens 50 readers while the writer commits
// as fast as it can (5 000 steps, then it holds the store): each reads
// some committed state, never a torn one, never going back, and the
// writer never fails and closes cleanly.
func TestReadersBesideBusyWriter(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".sextant")
	cmd, stdin, sc := helper(t, "busy", dir, "step 1", "SEXTANT_STORE_NOSYNC=1")
	lines := make(chan string, 1)
	go func() { // drain the writer's output; keep its errors
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "error:") {
				lines <- sc.Text()
				return
			}
		}
		close(lines)
	}()
	var last uint64
	for range 50 {
		got := checkBusy(t, dir)
		if got < last {
			t.Fatalf("reader read step %d after one read step %d", got, last)
		}
		last = got
	}
	select {
	case l, ok := <-lines:
		if ok {
			t.Fatalf("writer: %s", l)
		}
		t.Fatal("writer stopped")
	default:
	}
	if last < 1 {
		t.Fatal("readers read nothing")
	}
	must(t, stdin.Close())
	must(t, cmd.Wait()) // exits 1 on any error
}

// TestWriterWaitsForReader holds a reader in the middle of copying a
// store that no writer has open, starts a writer in another process, and
// lets the reader go only once the writer reports that it waits: the
// writer then opens; it does not fail.
func TestWriterWaitsForReader(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), ".sextant")
	s, err := Open(ctx, dir, testConfig())
	must(t, err)
	seed(t, s, "t1", 3)
	must(t, s.Close())

	inHook, release := make(chan struct{}), make(chan struct{})
	setTestHook(func(point string) {
		if point == "reader" {
			close(inHook)
			<-release
		}
	})
	defer func() { setTestHook(nil) }()
	type result struct {
		s   *Store
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := Open(ctx, dir, testConfig().WithReadOnly(true))
		done <- result{r, err}
	}()
	<-inHook
	cmd, stdin, sc := helper(t, "hold", dir, "~waiting for a reader to finish copying a snapshot", "SEXTANT_STORE_LOG=1")
	close(release)
	res := <-done
	must(t, res.err)
	defer res.s.Close()
	for sc.Scan() && sc.Text() != "ready" {
		if strings.HasPrefix(sc.Text(), "error:") {
			t.Fatalf("writer: %s", sc.Text())
		}
	}
	if sc.Text() != "ready" {
		t.Fatal("writer ended without opening the store")
	}
	tr, err := res.s.Tree(ctx, "t1")
	must(t, err)
	if len(tr.Executions[0].Spans) != 3 {
		t.Fatalf("reader read %d spans", len(tr.Executions[0].Spans))
	}
	must(t, stdin.Close())
	must(t, cmd.Wait())
}

// A writer that serves no snapshots (an older sextant, a socket path too
// long) leaves readers a clear error naming it.
func TestReaderOfWriterWithoutSnapshots(t *testing.T) {
	t.Chdir(t.TempDir())
	cmd, _, _ := helper(t, "hold", ".sextant", "ready")
	must(t, os.Remove(filepath.Join(".sextant", socketName)))
	_, err := Open(context.Background(), ".sextant", testConfig().WithReadOnly(true))
	abs, _ := filepath.Abs(filepath.Join(".sextant", socketName))
	wantErr(t, err, fmt.Sprintf("store .sextant is in use by pid %d (%s -test.run=^TestHelperProcess$ -test.count=1), "+
		"which could not share a snapshot for reading: it serves no snapshots (dial unix %s: connect: no such file or directory); "+
		"wait for it to finish, or stop it, and run this command again", cmd.Process.Pid, filepath.Base(os.Args[0]), abs))
	var le *LockedError
	if !errors.As(err, &le) || !le.ReadOnly || !errors.Is(err, ErrLocked) {
		t.Fatalf("not a read-only LockedError: %#v", err)
	}
	assertNoSnapshotsLeft(t, ".sextant")
}

// Snapshots of readers that died are removed by the next reader.
func TestSnapshotSweep(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), ".sextant")
	s, err := Open(ctx, dir, testConfig())
	must(t, err)
	seed(t, s, "t1", 1)
	must(t, s.Close())
	dead := filepath.Join(dir, snapshotDirName, "999999-dead")
	must(t, os.MkdirAll(dead, 0o755))
	must(t, os.WriteFile(filepath.Join(dead, snapshotOwner), nil, 0o644))
	r, err := Open(ctx, dir, testConfig().WithReadOnly(true))
	must(t, err)
	if _, err := os.Stat(dead); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("dead reader's snapshot kept: %v", err)
	}
	must(t, r.Close())
	assertNoSnapshotsLeft(t, dir)
}

func assertNoSnapshotsLeft(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(filepath.Join(dir, snapshotDirName))
	if len(entries) != 0 {
		t.Fatalf("snapshots left behind: %v", entries)
	}
}

// TestSnapshotWALEnd checks walEnd against Badger: a write-ahead log cut
// anywhere, then copied up to walEnd, opens read-only (Badger refuses a
// log that ends inside a transaction), and reads a prefix of the commits.
func TestSnapshotWALEnd(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), ".sextant")
	w, err := Open(ctx, dir, testConfig())
	must(t, err)
	defer w.Close()
	for i := range 5 {
		seed(t, w, fmt.Sprintf("t%d", i), 2)
	}
	sn, err := newSnapshot(dir)
	must(t, err)
	defer sn.remove()
	must(t, w.snapshotTo(sn.dir))

	mems, _ := filepath.Glob(filepath.Join(sn.dir, "*.mem"))
	if len(mems) != 1 {
		t.Fatalf("want one write-ahead log, have %v", mems)
	}
	full, err := os.ReadFile(mems[0])
	must(t, err)
	end, err := walEnd(bytes.NewReader(full), int64(len(full)))
	must(t, err)
	if end != int64(len(full)) {
		t.Fatalf("walEnd of a snapshot's log: %d, want its length %d", end, len(full))
	}
	lastTasks := -1
	for cut := int64(0); cut <= end; cut += max(1, end/40) {
		e, err := walEnd(bytes.NewReader(full[:cut]), cut)
		must(t, err)
		if e > cut {
			t.Fatalf("cut at %d: walEnd %d past the end", cut, e)
		}
		cdir := filepath.Join(t.TempDir(), "cut")
		must(t, os.Mkdir(cdir, 0o755))
		entries, _ := os.ReadDir(sn.dir)
		for _, en := range entries {
			if en.Name() == filepath.Base(mems[0]) || en.Name() == snapshotOwner {
				continue
			}
			must(t, os.Link(filepath.Join(sn.dir, en.Name()), filepath.Join(cdir, en.Name())))
		}
		if e > walHeaderSize {
			must(t, os.WriteFile(filepath.Join(cdir, filepath.Base(mems[0])), full[:e], 0o644))
		}
		db, err := badger.Open(badger.DefaultOptions(cdir).WithReadOnly(true).WithLogger(nil))
		if err != nil {
			t.Fatalf("cut at %d, walEnd %d: badger: %v", cut, e, err)
		}
		n := 0
		must(t, db.View(func(txn *badger.Txn) error {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte("t/")})
			defer it.Close()
			for it.Rewind(); it.Valid(); it.Next() {
				if strings.HasSuffix(string(it.Item().Key()), "/a") {
					n++
				}
			}
			return nil
		}))
		must(t, db.Close())
		if n < lastTasks {
			t.Fatalf("cut at %d: %d tasks, fewer than a shorter cut's %d", cut, n, lastTasks)
		}
		lastTasks = n
	}
	if lastTasks != 5 {
		t.Fatalf("the whole log reads %d tasks, want 5", lastTasks)
	}
}

// FuzzWALEnd: any bytes give an end within them, without panicking or
// allocating more than they hold.
func FuzzWALEnd(f *testing.F) {
	f.Add(make([]byte, 40))
	f.Add(append(make([]byte, 20), 0x40, 0, 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 0, 'k'))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := walEnd(bufio.NewReader(bytes.NewReader(b)), int64(len(b)))
		if err != nil || e > int64(len(b)) {
			t.Fatalf("walEnd: %d, %v for %d bytes", e, err, len(b))
		}
	})
}
