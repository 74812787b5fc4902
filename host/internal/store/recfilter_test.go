package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
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
