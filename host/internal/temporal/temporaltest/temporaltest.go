// Package temporaltest starts a real Temporal dev server on loopback for
// tests: the Temporal CLI's `server start-dev`, which embeds the server with
// SQLite. Nothing of Temporal's server is mocked.
//
// The binary is found through $SEXTANT_TEMPORAL_BIN, then `temporal` on PATH.
// Without it a test is skipped with a message saying how to build it, unless
// $CI is set, where a missing server is a failure: .ci/run installs it.
package temporaltest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
)

// Version is the Temporal CLI release .ci/run installs.
const Version = "v1.5.1"

// readyWithin bounds how long Start waits for the server to answer; it is a
// readiness deadline, not a sleep: Start returns as soon as the server answers.
const readyWithin = 2 * time.Minute

// Server is one running dev server.
type Server struct {
	// HostPort is the front end's gRPC address, e.g. 127.0.0.1:40123.
	HostPort string
	// Namespace is the namespace the tests use ("default").
	Namespace string
	// DBFile is the SQLite file that keeps the server's state across Restart.
	DBFile string

	bin  string
	port int
	mu   sync.Mutex
	cmd  *exec.Cmd
	logs *bytes.Buffer
	done chan struct{}
}

// Binary returns the Temporal CLI to run, or an error saying how to get it.
func Binary() (string, error) {
	if p := os.Getenv("SEXTANT_TEMPORAL_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("SEXTANT_TEMPORAL_BIN: %w", err)
		}
		return p, nil
	}
	p, err := exec.LookPath("temporal")
	if err != nil {
		return "", fmt.Errorf("no temporal binary: go install github.com/temporalio/cli/cmd/temporal@%s (or set SEXTANT_TEMPORAL_BIN)", Version)
	}
	return p, nil
}

// Start runs a dev server for the test and stops it at cleanup. It skips the
// test when no binary is installed, except under CI.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("temporaltest: %v", err)
		}
		t.Skipf("temporaltest: %v", err)
	}
	dir := t.TempDir()
	// The server listens on the port it is given and on ports it derives
	// from it (its HTTP API); another process may take one of those between
	// freePort and the server's bind, so a start that lost that race is
	// tried again on a new port.
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatalf("temporaltest: %v", err)
		}
		s := &Server{
			HostPort:  net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
			Namespace: "default",
			DBFile:    filepath.Join(dir, fmt.Sprintf("temporal-%d.db", attempt)),
			bin:       bin,
			port:      port,
		}
		err = s.start()
		if err == nil {
			t.Cleanup(s.Stop)
			return s
		}
		s.Stop()
		if attempt == 5 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatalf("temporaltest: %v", err)
		}
	}
}

// Restart stops the server and starts it again on the same port and database,
// so workflows, timers and signals recorded so far survive.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		t.Fatalf("temporaltest: restart: %v", err)
	}
}

// Dial opens a client to the server's namespace; the test closes it.
func (s *Server) Dial(t testing.TB) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: s.HostPort, Namespace: s.Namespace, Logger: quiet{}})
	if err != nil {
		t.Fatalf("temporaltest: dial %s: %v", s.HostPort, err)
	}
	t.Cleanup(c.Close)
	return c
}

// Logs returns what the server printed so far, for failure messages.
func (s *Server) Logs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.logs == nil {
		return ""
	}
	return s.logs.String()
}

// Stop kills the server and waits for it to exit. It is safe to call twice.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

func (s *Server) start() error {
	logs := &bytes.Buffer{}
	cmd := exec.Command(s.bin, "server", "start-dev",
		"--ip", "127.0.0.1", "--port", strconv.Itoa(s.port),
		"--headless", "--db-filename", s.DBFile, "--log-level", "warn")
	cmd.Stdout = &lockedWriter{mu: &s.mu, w: logs}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	s.mu.Lock()
	s.cmd, s.logs, s.done = cmd, logs, done
	s.mu.Unlock()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); close(done) }()

	ctx, cancel := context.WithTimeout(context.Background(), readyWithin)
	defer cancel()
	for {
		c, err := client.DialContext(ctx, client.Options{HostPort: s.HostPort, Namespace: s.Namespace, Logger: quiet{}})
		if err == nil {
			_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
			if err == nil {
				_, err = c.WorkflowService().DescribeNamespace(ctx, describe(s.Namespace))
			}
			c.Close()
			if err == nil {
				return nil
			}
		}
		select {
		case werr := <-exited:
			return fmt.Errorf("dev server exited before it answered: %v\n%s", werr, s.Logs())
		case <-ctx.Done():
			s.Stop()
			return fmt.Errorf("dev server on %s did not answer within %s: %w\n%s", s.HostPort, readyWithin, errors.Join(err, ctx.Err()), s.Logs())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// CPU returns the CPU time the running server has used so far (user and
// system), read from /proc: what a benchmark charges the server per run.
// ok is false where /proc is not there, or no server runs.
func (s *Server) CPU() (d time.Duration, ok bool) {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return 0, false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
	if err != nil {
		return 0, false
	}
	// The fields after the command's name (in parentheses, which may
	// hold spaces): state is the first, utime and stime the 12th and
	// 13th, in clock ticks (100 a second on Linux).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, true
}
