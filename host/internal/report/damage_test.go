package report

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/store"
)

// TestWriteCheckAndSalvage: damage is listed file, task, record, and the
// summary names the salvage command with the store flag.
func TestWriteCheckAndSalvage(t *testing.T) {
	file := &store.DamageError{File: "000012.sst", Err: errors.New("checksum mismatch")}
	task := &store.DamageError{Task: "t1", Err: errors.New("bad value")}
	key := &store.DamageError{Key: "r/abc", Err: errors.New("bad value")}
	var b bytes.Buffer
	WriteCheck(&b, &store.CheckReport{Files: []*store.DamageError{file}, Tasks: []*store.DamageError{task}, Keys: []*store.DamageError{key}, TasksRead: 4}, "st", " --store st")
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 5 || lines[0] != "damaged file 000012.sst: checksum mismatch" || !strings.HasPrefix(lines[1], "damaged task t1: ") ||
		!strings.HasPrefix(lines[2], "damaged record r/abc: ") ||
		lines[3] != "store st is damaged: 1 file(s), 1 task(s), 1 other record(s); 4 task(s) read whole" || lines[4] != "run: sextant store salvage --to DIR --store st" {
		t.Fatalf("check:\n%s", b.String())
	}
	b.Reset()
	WriteCheck(&b, &store.CheckReport{TasksRead: 2}, "st", "")
	if want := "store st: no damage found (2 task(s) read whole)\n"; b.String() != want {
		t.Errorf("clean check: %q, want %q", b.String(), want)
	}
	b.Reset()
	WriteSalvage(&b, &store.SalvageReport{Copied: store.Counts{Tasks: 3, Spans: 9}, Left: []*store.DamageError{key, task}}, "new")
	lines = strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "damaged task t1") || !strings.HasPrefix(lines[1], "damaged record r/abc") ||
		lines[2] != "salvaged 3 task(s) (0 executions, 9 spans, 0 rewards, 0 checkpoints) and 0 recording(s) into new; left behind 2" {
		t.Fatalf("salvage:\n%s", b.String())
	}
}
