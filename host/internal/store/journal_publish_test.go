package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// putRec journals a recording of hash with a response of about size bytes.
func putRec(ctx context.Context, s *Store, hash string, size int) error {
	resp, _ := json.Marshal(map[string]string{"text": strings.Repeat("x", size)})
	return s.PutRecording(ctx, &Recording{Hash: hash, Kind: RecordChat, Request: json.RawMessage(`{}`), Response: resp})
}

// pausedWriter starts writer A, which stops between taking its record's
// room and writing it (the hook "journal-reserved"), and writer B, which
// journals a record of bSize bytes after A's. It returns at the first
// sign of B: the hook it reached (the channels' names) or its return.
func pausedWriter(t *testing.T, s *Store, bSize int) (sign string, release func()) {
	t.Helper()
	ctx := context.Background()
	reserved, resume := make(chan struct{}), make(chan struct{})
	signs := make(chan string, 4)
	var first atomic.Bool
	setTestHook(func(point string) {
		switch point {
		case "journal-reserved":
			if first.CompareAndSwap(false, true) {
				close(reserved)
				<-resume
			}
		case "journal-publish-wait", "journal-segment-wait":
			select { // under the journal's lock: never blocks
			case signs <- point:
			default:
			}
		}
	})
	aDone, bDone := make(chan error, 1), make(chan error, 1)
	go func() { aDone <- putRec(ctx, s, "a", 10) }()
	<-reserved
	go func() {
		err := putRec(ctx, s, "b", bSize)
		if _, aerr := s.Recording(ctx, "a"); err == nil && aerr != nil {
			err = fmt.Errorf("B returned before A, journaled first, was published: %w", aerr)
		}
		bDone <- err
	}()
	select {
	case err := <-bDone:
		must(t, err)
		sign = "returned"
		bDone <- nil
	case sign = <-signs:
	}
	return sign, func() {
		close(resume)
		must(t, <-aDone)
		must(t, <-bDone)
		setTestHook(nil)
	}
}

// TestJournalPublishOrder: writers copy their records into the journal
// at once, but one returns only when every record before its own is
// whole. B, after A, waits for A; meanwhile neither is visible, and a
// kill leaves A's record torn and B's, whole as it is, behind it and
// not replayed.
func TestJournalPublishOrder(t *testing.T) {
	holdJournal(t)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), ".sextant")
	image := filepath.Join(t.TempDir(), "image")
	s, err := Open(ctx, dir, testConfig())
	must(t, err)
	defer s.Close()
	must(t, putRec(ctx, s, "c", 10))
	sign, release := pausedWriter(t, s, 10)
	if sign != "journal-publish-wait" {
		release()
		t.Fatalf("B, journaled after A, which is still being written: %s, want it waiting for A", sign)
	}
	for _, h := range []string{"a", "b"} {
		if _, err := s.Recording(ctx, h); !errors.Is(err, ErrNotFound) {
			t.Errorf("recording %s, not yet published: %v, want ErrNotFound", h, err)
		}
	}
	crashImage(t, dir, image)
	release()
	for _, h := range []string{"a", "b", "c"} {
		if _, err := s.Recording(ctx, h); err != nil {
			t.Errorf("recording %s once published: %v", h, err)
		}
	}

	img, err := Open(ctx, image, testConfig())
	must(t, err)
	defer img.Close()
	for h, want := range map[string]bool{"c": true, "a": false, "b": false} {
		if _, err := img.Recording(ctx, h); (err == nil) != want {
			t.Errorf("crash image: recording %s: %v, want found %t", h, err, want)
		}
	}
}

// TestJournalSegmentWaits: a record that needs the next segment waits
// until every record of the current one is whole, so that a torn record
// is the last one replay reads.
func TestJournalSegmentWaits(t *testing.T) {
	holdJournal(t)
	smallSegments(t)
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), ".sextant"), testConfig())
	must(t, err)
	defer s.Close()
	must(t, putRec(ctx, s, "c", 10))
	sign, release := pausedWriter(t, s, journalSegSize) // B fits only in a segment of its own
	release()
	if sign != "journal-segment-wait" {
		t.Fatalf("B, which needs a new segment while A is written in the current one: %s, want it waiting before the switch", sign)
	}
	s.jr.mu.Lock()
	n := s.jr.seg
	s.jr.mu.Unlock()
	if n != 2 {
		t.Fatalf("the journal is at segment %d, want 2: the test tests nothing", n)
	}
}

// TestJournalCloseWaitsForWriters: a writer that took room in the
// segment writes its record there with no lock held, so Close waits for
// it before unmapping the segment (it wrote into unmapped memory: a
// fault that killed the process), lets no new writer in meanwhile, and
// applies the record.
func TestJournalCloseWaitsForWriters(t *testing.T) {
	holdJournal(t)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), ".sextant")
	s, err := Open(ctx, dir, testConfig())
	must(t, err)
	reserved, resume, waiting := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var first, closeWait atomic.Bool
	setTestHook(func(point string) {
		switch point {
		case "journal-reserved":
			if first.CompareAndSwap(false, true) {
				close(reserved)
				<-resume
			}
		case "journal-close-wait":
			if closeWait.CompareAndSwap(false, true) {
				close(waiting)
			}
		}
	})
	defer setTestHook(nil)
	aDone, closed := make(chan error, 1), make(chan error, 1)
	go func() { aDone <- putRec(ctx, s, "a", 10) }()
	<-reserved
	go func() { closed <- s.Close() }()
	select {
	case <-waiting:
	case err := <-closed:
		// The writer is left paused: released, it would write into the
		// unmapped segment.
		t.Fatalf("Close returned (%v) while a writer was writing its record into the journal", err)
	}
	if err := putRec(ctx, s, "b", 10); !errors.Is(err, errJournalClosed) {
		t.Errorf("a write while the journal closes: %v, want %v", err, errJournalClosed)
	}
	close(resume)
	must(t, <-aDone)
	must(t, <-closed)
	r, err := Open(ctx, dir, testConfig())
	must(t, err)
	defer r.Close()
	if _, err := r.Recording(ctx, "a"); err != nil {
		t.Errorf("recording a, written while the store closed: %v", err)
	}
}
