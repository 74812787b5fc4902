package process

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/plugintest"
)

// helperEnv makes the test binary a host: it opens the plugin named by the
// variable's value, prints the child's pid and blocks until killed.
const helperEnv = "SEXTANT_PROCESS_TEST_HOST"

func helperHost() {
	name := "misbehave"
	var env []string
	if f := os.Getenv(grandchildEnv); f != "" {
		name, env = "spawner", []string{grandchildEnv + "=" + f}
	}
	p, err := Open(context.Background(), Config{
		Name:    name,
		Command: []string{os.Getenv(helperEnv)},
		Env:     env,
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Printf("pid %d\n", p.pid())
	select {}
}

// TestNoOrphans: when the host is SIGKILLed — no Close, no deferred
// cleanup — the kernel takes the plugin down with it. The host also writes
// nothing of its own to stderr: go-plugin's logging goes to slog.
func TestNoOrphans(t *testing.T) {
	bin := plugintest.Native(t, misbehavePkg)
	host := exec.Command(os.Args[0], "-test.run=^$")
	// A SIGKILLed host cannot remove go-plugin's socket directory; let it
	// land in a directory the test removes.
	host.Env = append(os.Environ(), helperEnv+"="+bin, "TMPDIR="+t.TempDir())
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
	var line string
	select {
	case line = <-lines:
	case <-time.After(30 * time.Second):
		t.Fatal("helper host did not report its plugin")
	}
	pidText, ok := strings.CutPrefix(line, "pid ")
	if !ok {
		t.Fatalf("helper host: %q", line)
	}
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 || !alive(pid) {
		t.Fatalf("helper host: plugin pid %q not running", pidText)
	}

	if err := host.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	host.Wait()
	if !gone(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("plugin %d outlived its SIGKILLed host", pid)
	}
	if stderr.Len() > 0 {
		t.Fatalf("host wrote to stderr:\n%s", stderr.String())
	}
}
