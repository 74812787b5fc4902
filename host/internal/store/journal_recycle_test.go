package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/failpoint"
)

// smallSegments makes the test's journal segments small, so that a few
// steps fill one.
func smallSegments(t *testing.T) {
	old := journalSegSize
	journalSegSize = 8 << 10
	t.Cleanup(func() { journalSegSize = old })
}

// recycledImage is a crash image taken while (or after) an applied
// segment was recycled, and what the store had acknowledged then.
type recycledImage struct {
	name  string
	dir   string
	steps int // b-run's steps acknowledged
}

// TestJournalRecycledSegment fills segments with one run's steps,
// applies them (the segments become spares), and journals another run
// until a spare is recycled, taking the store as a kill leaves it while
// the spare is renamed and at the checkpoints after: replay takes the new
// run's records from the recycled segment and none of the old ones,
// valid as they are, behind them; nothing is damaged or kept aside.
func TestJournalRecycledSegment(t *testing.T) {
	if !recycleSegments {
		t.Skip("segments are not recycled here")
	}
	smallSegments(t)
	smallFiles(t) // each image copies the store: Badger's preallocated logs small too
	for _, fsync := range []bool{false, true} {
		t.Run(fmt.Sprintf("fsync=%t", fsync), func(t *testing.T) {
			holdJournal(t)
			ctx := context.Background()
			dir := filepath.Join(t.TempDir(), ".sextant")
			s, err := Open(ctx, dir, testConfig().WithSyncCheckpoints(fsync))
			must(t, err)
			defer s.Close()
			const oldSteps = 30
			journalRun(t, s, "a-run", oldSteps)
			must(t, s.Sync()) // applied: the full segments become spares
			s.jr.mu.Lock()
			spares := len(s.jr.spares)
			s.jr.mu.Unlock()
			if spares == 0 {
				t.Fatal("no spare segment after the journal was applied: the test tests nothing")
			}

			var (
				images []recycledImage
				done   int // b-run's steps journaled
				mu     sync.Mutex
			)
			take := func(name string) {
				mu.Lock()
				defer mu.Unlock()
				img := recycledImage{name: name, dir: filepath.Join(t.TempDir(), "image"), steps: done}
				crashImage(t, dir, img.dir)
				images = append(images, img)
			}
			after := 0 // checkpoints taken in a recycled segment
			setTestHook(func(p string) {
				switch p {
				case "journal-recycle", "journal-recycled":
					take(p)
				case failpoint.CheckpointCommitted:
					s.jr.mu.Lock()
					recycled := s.jr.cur.gen > 0
					s.jr.mu.Unlock()
					if recycled && after < 3 {
						after++
						mu.Lock()
						done++ // this checkpoint is acknowledged in the image
						mu.Unlock()
						take(fmt.Sprintf("checkpoint %d", after))
						mu.Lock()
						done--
						mu.Unlock()
					}
				}
			})
			must(t, s.Begin(ctx, &Task{ID: "b-run", Pipeline: "p", Tags: []string{"t"}, Input: []byte(`{}`)},
				&Execution{ID: "b-run-e1"}, &Checkpoint{State: []byte(`{"step":0}`)}))
			for n := 1; after < 3 && n <= 4*oldSteps; n++ {
				journalStep(t, s, "b-run", n)
				mu.Lock()
				done = n
				mu.Unlock()
			}
			setTestHook(nil)
			if after < 3 || len(images) < 5 {
				t.Fatalf("%d images, %d in a recycled segment: no spare was recycled", len(images), after)
			}
			for _, img := range images {
				t.Run(img.name, func(t *testing.T) { checkRecycledImage(t, img, oldSteps) })
			}
		})
	}
}

// checkRecycledImage checks that the image's recycled segment yields only
// its new records, though old valid ones follow them, and that the image
// opens with every acknowledged step and no damage.
func checkRecycledImage(t *testing.T, img recycledImage, oldSteps int) {
	jdir := filepath.Join(img.dir, journalDirName)
	segs, err := journalSegments(jdir)
	must(t, err)
	recycled := 0
	for _, seg := range segs {
		path := filepath.Join(jdir, segName(seg))
		b, err := os.ReadFile(path)
		must(t, err)
		if binary.LittleEndian.Uint32(b) != journalMagic || binary.LittleEndian.Uint64(b[24:]) == 0 ||
			binary.LittleEndian.Uint64(b[8:]) != seg {
			continue // not recycled, or its header not rewritten yet
		}
		recycled++
		base := binary.LittleEndian.Uint64(b[16:])
		end := int64(journalSegHeader)
		bad, _, err := readSegment(path, seg, func(r *jrec) error {
			if r.lsn < base || r.task != "b-run" {
				t.Errorf("segment %s (base %d) yields record %d of %q: an old record replayed", segName(seg), base, r.lsn, r.task)
			}
			end += int64(r.size)
			return nil
		})
		must(t, err)
		if bad >= 0 {
			t.Errorf("segment %s: the records stop at %d as damaged", segName(seg), bad)
		}
		old := oldRecord(b[end:], base)
		if old == nil {
			t.Fatalf("segment %s: no old valid record follows the new ones: the test tests nothing", segName(seg))
		}
		// A power loss may leave an old record right after the new ones
		// (the zeroed length not on disk): it ends the records too.
		b = append(b[:end:end], old...)
		torn := filepath.Join(t.TempDir(), segName(seg))
		must(t, os.WriteFile(torn, b, 0o644))
		bad, _, err = readSegment(torn, seg, func(r *jrec) error {
			if r.lsn < base {
				t.Errorf("segment %s (base %d) yields old record %d", segName(seg), base, r.lsn)
			}
			return nil
		})
		must(t, err)
		if bad >= 0 {
			t.Errorf("segment %s: an old record after the new ones is taken as damage at %d", segName(seg), bad)
		}
	}
	if strings.HasPrefix(img.name, "checkpoint") && recycled == 0 {
		t.Fatal("the image holds no recycled segment")
	}

	var log bytes.Buffer
	c, err := Open(context.Background(), img.dir, testConfig().WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
	must(t, err)
	defer c.Close()
	checkSteps(t, c, "a-run", oldSteps)
	tree, err := c.Tree(context.Background(), "b-run")
	must(t, err)
	if e := tree.Executions[0]; e.Checkpoint.Step != uint64(img.steps) || len(e.Spans) != img.steps {
		t.Errorf("b-run: checkpoint at step %d with %d spans, want %d", e.Checkpoint.Step, len(e.Spans), img.steps)
	}
	if strings.Contains(log.String(), "damaged") || strings.Contains(log.String(), "level=WARN") {
		t.Errorf("replay reported damage:\n%s", log.String())
	}
	if bad, _ := badSegments(filepath.Join(img.dir, journalDirName)); bad != 0 {
		t.Error("a segment was kept aside as damaged")
	}
}

// oldRecord returns a record found at some offset of b that checks
// and is numbered below base, or nil.
func oldRecord(b []byte, base uint64) []byte {
	for off := 0; off+journalHeader <= len(b); off++ {
		n := int(binary.LittleEndian.Uint32(b[off:]))
		if n == 0 || n > len(b)-off-journalHeader {
			continue
		}
		hdr := b[off : off+journalHeader]
		crc := crc32.Update(crc32.Checksum(hdr[8:], castagnoli), castagnoli, b[off+journalHeader:off+journalHeader+n])
		if crc == binary.LittleEndian.Uint32(hdr[4:]) && binary.LittleEndian.Uint64(hdr[8:]) < base {
			return b[off : off+journalHeader+n]
		}
	}
	return nil
}
