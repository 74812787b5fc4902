// Package plugintest builds plugin sources into real artifacts for tests:
// native go-plugin binaries and wasip1 c-shared modules. Builds go through
// the go command (and so its build cache) once per test process.
package plugintest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	mu     sync.Mutex
	built  = map[string]string{}
	outDir string
)

// Root returns the repository root (the directory holding go.mod).
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// Native builds the package at pkg (relative to the repository root, e.g.
// "testdata/plugins/echo-provider") as a native binary and returns its path.
func Native(tb testing.TB, pkg string) string {
	tb.Helper()
	return build(tb, pkg, false)
}

// Wasm builds the package at pkg as a wasip1 c-shared module and returns its path.
func Wasm(tb testing.TB, pkg string) string {
	tb.Helper()
	return build(tb, pkg, true)
}

func build(tb testing.TB, pkg string, wasm bool) string {
	mu.Lock()
	defer mu.Unlock()
	key := fmt.Sprintf("%s|%v", pkg, wasm)
	if p, ok := built[key]; ok {
		return p
	}
	if outDir == "" {
		d, err := os.MkdirTemp("", "sextant-plugintest-")
		if err != nil {
			tb.Fatalf("plugintest: %v", err)
		}
		outDir = d
	}
	name := filepath.Base(pkg)
	args := []string{"build", "-o"}
	env := os.Environ()
	if wasm {
		name += ".wasm"
		env = append(env, "GOOS=wasip1", "GOARCH=wasm")
		args = append(args, filepath.Join(outDir, name), "-buildmode=c-shared")
	} else {
		args = append(args, filepath.Join(outDir, name))
	}
	args = append(args, "./"+filepath.ToSlash(pkg))
	cmd := exec.Command("go", args...)
	cmd.Dir = Root()
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("plugintest: go %v: %v\n%s", args, err, out)
	}
	p := filepath.Join(outDir, name)
	built[key] = p
	return p
}

// SHA256 returns the hex sha256 of the file at path.
func SHA256(tb testing.TB, path string) string {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("plugintest: %v", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Cleanup removes the build directory; call it from TestMain after m.Run.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if outDir != "" {
		os.RemoveAll(outDir)
		outDir = ""
		built = map[string]string{}
	}
}
