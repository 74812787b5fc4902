package process

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/plugintest"
)

// grandchildEnv names the file the spawner plugin writes its grandchild's
// pid to; set for the helper host, it also makes the host open the spawner.
const grandchildEnv = "SEXTANT_TEST_GRANDCHILD_FILE"

const spawnerPkg = "testdata/plugins/spawner"

// TestNoOrphanGrandchildren: a plugin starts `sleep 3601`; however the host
// dies — SIGKILL (no cleanup at all), SIGTERM, SIGINT — the sleep dies too.
func TestNoOrphanGrandchildren(t *testing.T) {
	bin := plugintest.Native(t, spawnerPkg)
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "grandchild.pid")
			host := exec.Command(os.Args[0], "-test.run=^$")
			host.Env = append(os.Environ(), helperEnv+"="+bin, grandchildEnv+"="+pidFile, "TMPDIR="+t.TempDir())
			var stderr bytes.Buffer
			host.Stderr = &stderr
			out, err := host.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := host.Start(); err != nil {
				t.Fatal(err)
			}
			defer host.Process.Kill()
			lines := make(chan string, 1)
			go func() {
				s := bufio.NewScanner(out)
				s.Scan()
				lines <- s.Text()
				io.Copy(io.Discard, out)
			}()
			select {
			case line := <-lines:
				if !strings.HasPrefix(line, "pid ") {
					t.Fatalf("helper host: %q (stderr: %s)", line, stderr.String())
				}
			case <-time.After(60 * time.Second):
				t.Fatal("helper host did not report its plugin")
			}
			// The plugin wrote the file before its handshake, so before
			// the host printed its line.
			b, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatal(err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil || pid <= 0 {
				t.Fatalf("grandchild pid %q", b)
			}
			start, ok := startTime(pid)
			if !ok {
				t.Fatalf("grandchild %d is not running", pid)
			}
			defer syscall.Kill(pid, syscall.SIGKILL) // only if the test fails: it should be gone

			if err := host.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			host.Wait()
			// Bounded polling: the kernel tears the tree down at once, but
			// a busy machine may take a while to run it.
			for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if st, ok := startTime(pid); !ok || st != start {
					return // gone (or reaped and its pid reused)
				}
				if time.Now().After(deadline) {
					t.Fatalf("grandchild %d (sleep 3601) outlived its host killed by %v", pid, sig)
				}
			}
		})
	}
}

// startTime returns a live (not zombie) process's start time, which tells it
// apart from a later process that reuses its pid.
func startTime(pid int) (string, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", false
	}
	f := strings.Fields(s[i+1:])
	// f[0] is the state (field 3), f[19] the start time (field 22).
	if len(f) < 20 || f[0] == "Z" {
		return "", false
	}
	return f[19], true
}
