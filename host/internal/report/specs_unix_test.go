//go:build unix

package report_test

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/report"
)

// TestWriteSpecsThroughLinksAndDevices: a report path that is a symlink is
// written through (the link stays), and one that is no regular file (a
// pipe, /dev/stdout, /dev/null) is written in place, never replaced by a
// renamed file.
func TestWriteSpecsThroughLinksAndDevices(t *testing.T) {
	dir := t.TempDir()
	r := &report.Report{Pipeline: "p"}
	real, link := filepath.Join(dir, "real.json"), filepath.Join(dir, "link.json")
	if err := os.WriteFile(real, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	// The reader is open before the report is written, so the writer's
	// open does not wait; the report fits in the pipe's buffer.
	rd, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var stdout bytes.Buffer
	if err := report.WriteSpecs([]string{"json=" + link, "md=" + fifo}, &stdout, r); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("link.json after the write: %v, %v; want the symlink kept", fi, err)
	}
	if got, _ := os.ReadFile(real); !bytes.HasPrefix(got, []byte("{")) {
		t.Fatalf("real.json: %q, want the JSON report", got)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("pipe after the write: %v, %v; want the named pipe kept", fi, err)
	}
	got := make([]byte, 1<<16)
	n, _ := rd.Read(got)
	if !bytes.HasPrefix(got[:n], []byte("## sextant: p")) {
		t.Fatalf("read from the pipe: %q", got[:n])
	}
}
