//go:build unix

package replay_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/sdk"
)

// TestResultsPathNotRegular: a results path that is no regular file (a
// pipe; /dev/null, which a rename as root would replace) is refused before
// the replay, and left as it was; a symlink is written through.
func TestResultsPathNotRegular(t *testing.T) {
	files, sts := twoStrategies(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	_, err := replay.CreateResults(fifo, "pipeline.toml", files, sts, replay.ResultsHeader{})
	if !errors.Is(err, sdk.ErrInvalid) || err.Error() != "results: "+fifo+" is not a regular file: merge reads the results from a file" {
		t.Fatalf("err = %v", err)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the pipe after a refused create: %v, %v", fi, err)
	}
	real, link := filepath.Join(dir, "real.jsonl"), filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	rf, err := replay.CreateResults(link, "pipeline.toml", files, sts, replay.ResultsHeader{})
	if err != nil {
		t.Fatal(err)
	}
	if err := rf.Commit(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link after a commit: %v, %v; want it kept", fi, err)
	}
	if _, err := replay.ReadResults(real); err != nil {
		t.Fatalf("the link's target: %v", err)
	}
}
