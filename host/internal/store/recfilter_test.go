package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

func testRecording(hash, task string) *Recording {
	return &Recording{Hash: hash, Kind: RecordChat, Task: task, Request: json.RawMessage(`{}`), Response: json.RawMessage(`{"ok":true}`)}
}

// builtFilter waits for the store's recording filter to be built and
// fails unless it is.
func builtFilter(t *testing.T, s *Store) {
	t.Helper()
	<-s.recf.done
	if s.recf.cur.Load() == nil {
		t.Fatal("the recording filter was not built")
	}
}

// TestRecordingFilter writes recordings through every path that writes
// one (a run's step, a proxied call, an import), in a
// store opened before and after: the filter answers "absent" for none of
// them, and does for a hash never written (so a miss skips Badger).
func TestRecordingFilter(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), ".sextant")
	s, err := Open(ctx, dir, testConfig())
	must(t, err)
	builtFilter(t, s)
	var hashes []string
	put := func(s *Store, hash string) {
		must(t, s.PutRecording(ctx, testRecording(hash, "")))
		hashes = append(hashes, hash)
	}
	check := func(s *Store) {
		t.Helper()
		builtFilter(t, s)
		must(t, s.Sync()) // out of the journal's overlay: the filter answers
		for _, h := range hashes {
			if s.recf.absent(h) {
				t.Errorf("the filter says recording %s is absent", h)
			}
			if _, err := s.Recording(ctx, h); err != nil {
				t.Errorf("recording %s: %v", h, err)
			}
		}
		if !s.recf.absent("never-written") {
			t.Error("the filter answers maybe for a hash never written: a miss reads Badger")
		}
		if _, err := s.Recording(ctx, "never-written"); !errors.Is(err, ErrNotFound) {
			t.Errorf("a miss: %v", err)
		}
	}
	put(s, "live-1")
	journalRun(t, s, "run", 2)
	hashes = append(hashes, "run-r1", "run-r2")
	must(t, s.RecordCall(ctx, &Call{Task: &Task{ID: "call", Pipeline: "proxy", Input: json.RawMessage(`{}`)},
		Execution: &Execution{ID: "call-e1"}, Recording: testRecording("call-r1", "call")}))
	hashes = append(hashes, "call-r1")
	check(s)

	// An import into another store, open meanwhile.
	var exp bytes.Buffer
	_, err = s.Export(ctx, &exp, ExportOptions{})
	must(t, err)
	dst := openTest(t)
	builtFilter(t, dst)
	_, err = dst.Import(ctx, bytes.NewReader(exp.Bytes()), "export")
	must(t, err)
	check(dst)
	must(t, dst.Close())

	must(t, s.Close())
	s, err = Open(ctx, dir, testConfig())
	must(t, err)
	defer s.Close()
	check(s) // built from Badger's keys
	put(s, "live-2")
	check(s)
}

// TestRecordingFilterNotedDuringBuild writes a recording, into Badger,
// after the build's scan began: the build takes it from what was noted.
func TestRecordingFilterNotedDuringBuild(t *testing.T) {
	ctx := context.Background()
	scanning, release := make(chan struct{}), make(chan struct{})
	setTestHook(func(p string) {
		if p == "recfilter-scan" {
			close(scanning)
			<-release
		}
	})
	t.Cleanup(func() { setTestHook(nil) })
	s := openTest(t)
	<-scanning
	for i := range 3 {
		must(t, s.PutRecording(ctx, testRecording(fmt.Sprintf("during-%d", i), "")))
	}
	must(t, s.Sync())
	close(release)
	builtFilter(t, s)
	for i := range 3 {
		if _, err := s.Recording(ctx, fmt.Sprintf("during-%d", i)); err != nil {
			t.Errorf("recording written during the build: %v", err)
		}
	}
}

// TestRecordingFilterRebuild fills a filter sized for 64 recordings with
// thousands, some applied to Badger and some still journaled: a lookup
// starts a rebuild, recordings written while its scan runs (journaled,
// and a proxied call's, committed to Badger) are noted into it, and the
// rebuilt filter answers "absent" for none of them and rarely says
// "maybe" for a hash never written.
func TestRecordingFilterRebuild(t *testing.T) {
	old := bloomMinWords
	bloomMinWords = 16 // 1 KiB: room for 64 recordings
	t.Cleanup(func() { bloomMinWords = old })
	holdJournal(t)
	ctx := context.Background()
	s := openTest(t)
	builtFilter(t, s)
	var hashes []string
	put := func(hash string) {
		must(t, s.PutRecording(ctx, testRecording(hash, "")))
		hashes = append(hashes, hash)
	}
	for i := range 1500 {
		put(fmt.Sprintf("applied-%d", i))
	}
	must(t, s.Sync())
	for i := range 500 {
		put(fmt.Sprintf("journaled-%d", i)) // left in the journal's overlay
	}
	falseMaybe := func() int {
		n := 0
		for i := range 10000 {
			if !s.recf.cur.Load().has(s.recf.hash(fmt.Sprintf("never-%d", i))) {
				continue
			}
			n++
		}
		return n
	}
	if n := falseMaybe(); n < 5000 {
		t.Fatalf("the full filter says maybe for %d of 10000 hashes never written: the test tests nothing", n)
	}

	scanning, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	setTestHook(func(p string) {
		if p == "recfilter-scan" {
			once.Do(func() {
				close(scanning)
				<-release
			})
		}
	})
	t.Cleanup(func() { setTestHook(nil) })
	s.recf.absent("never-written") // past its room: starts the rebuild
	if !s.recf.building.Load() {
		t.Fatal("a lookup in a filter past its room started no rebuild")
	}
	<-scanning
	for i := range 3 {
		put(fmt.Sprintf("during-%d", i))
	}
	must(t, s.RecordCall(ctx, &Call{Task: &Task{ID: "call", Pipeline: "proxy", Input: json.RawMessage(`{}`)},
		Execution: &Execution{ID: "call-e1"}, Recording: testRecording("during-call", "call")}))
	hashes = append(hashes, "during-call")
	close(release)
	s.recf.builds.Wait()

	if b := s.recf.cur.Load(); b.room < int64(len(hashes)) {
		t.Fatalf("the filter has room for %d recordings, the store holds %d: not rebuilt", b.room, len(hashes))
	}
	for _, h := range hashes {
		if s.recf.absent(h) {
			t.Errorf("the rebuilt filter says recording %s is absent", h)
		}
	}
	if n := falseMaybe(); n > 300 {
		t.Errorf("the rebuilt filter says maybe for %d of 10000 hashes never written", n)
	}
	must(t, s.Sync())
	for _, h := range hashes {
		if _, err := s.Recording(ctx, h); err != nil {
			t.Errorf("recording %s: %v", h, err)
		}
	}
}
