// Package mcptest gives tests real MCP servers from npm: the reference
// filesystem server (stdio) and the everything server (streamable HTTP),
// pinned by host/internal/tool/testdata/npm/package-lock.json and
// installed by .ci/run (`npm ci --prefix …`), or here when missing.
//
// A test that needs them is skipped where node is absent, unless $CI is
// set: CI must run it.
package mcptest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// Dir returns the npm folder holding the servers (its node_modules
// installed).
func Dir(tb testing.TB) string {
	tb.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatal("node is not installed, and CI must run the MCP server tests (.ci/run installs nodejs)")
		}
		tb.Skip("node is not installed: the npm MCP servers cannot run here")
	}
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "testdata", "npm")
	installOnce.Do(func() {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-filesystem", "package.json")); err == nil {
			return
		}
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			installErr = fmt.Errorf("npm ci in %s: %v\n%s", dir, err, out)
		}
	})
	if installErr != nil {
		tb.Fatal(installErr)
	}
	return dir
}

var (
	installOnce sync.Once
	installErr  error
)

// Filesystem returns the path of the filesystem server's entry point
// (run it as `node PATH DIR…`).
func Filesystem(tb testing.TB) string {
	tb.Helper()
	return filepath.Join(Dir(tb), "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
}

// Everything starts the everything server over streamable HTTP on a free
// loopback port and returns its endpoint; it is stopped when the test
// ends. It returns once the server says it listens.
func Everything(tb testing.TB) string {
	tb.Helper()
	entry := filepath.Join(Dir(tb), "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("node", entry, "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	var said []string
	for sc.Scan() {
		said = append(said, sc.Text())
		if strings.Contains(sc.Text(), "listening on port") {
			go func() {
				for sc.Scan() { // drain, so the server never blocks on stderr
				}
			}()
			return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
		}
	}
	tb.Fatalf("everything server exited before listening:\n%s", strings.Join(said, "\n"))
	return ""
}
