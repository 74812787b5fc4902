package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// A reader that opens the store while its writer closes never fails: at
// every point of Close it is either served a snapshot by the writer or
// waits for the lock and copies the store itself. Hooks hold the writer
// at each point; nothing depends on timing.
func TestReaderBesideClosingWriter(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), ".sextant")
	points := []string{"close-start", "close-unserved", "close-db-closed"}
	t.Cleanup(func() { setTestHook(nil) })
	var failures []string
	for round := range 200 {
		point := points[round%len(points)]
		w, err := Open(ctx, dir, testConfig())
		must(t, err)
		must(t, w.CreateTask(ctx, &Task{ID: fmt.Sprintf("task-%03d", round), Pipeline: "p"}))
		at, proceed, waiting := make(chan struct{}), make(chan struct{}), make(chan struct{}, 1)
		setTestHook(func(p string) {
			switch p {
			case point:
				close(at)
				<-proceed
			case "reader-waits":
				waiting <- struct{}{}
			}
		})
		closed := make(chan error, 1)
		go func() { closed <- w.Close() }()
		<-at
		read := make(chan error, 1)
		go func() {
			r, err := Open(ctx, dir, testConfig().WithReadOnly(true))
			if err != nil {
				read <- err
				return
			}
			defer r.Close()
			ts, err := r.Tasks(ctx, Query{})
			if err == nil && len(ts) != round+1 {
				err = fmt.Errorf("read %d tasks, want %d", len(ts), round+1)
			}
			read <- err
		}()
		var rerr error
		if point == "close-start" {
			rerr = <-read // the writer still serves snapshots
		} else {
			<-waiting // the socket is gone: the reader waits for the lock
		}
		close(proceed)
		must(t, <-closed)
		if point != "close-start" {
			rerr = <-read
		}
		setTestHook(nil)
		if rerr != nil {
			failures = append(failures, fmt.Sprintf("round %d (%s): %v", round, point, rerr))
		}
	}
	if len(failures) > 0 {
		t.Fatalf("%d of 200 reads failed; first: %s", len(failures), failures[0])
	}
}
