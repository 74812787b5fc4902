package cli

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"sextant": Main})
}

// TestScripts runs the CLI scripts in testdata/script with the real
// sextant command. Scripts may build plugins from the repository's sources
// with `go -C $SEXTANT_ROOT build …`; the go command runs offline from
// the module cache.
func TestScripts(t *testing.T) {
	root := repoRoot(t)
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join(root, "testdata", "script"),
		Setup: func(env *testscript.Env) error {
			for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOROOT", "PATH"} {
				env.Setenv(k, goEnv(k))
			}
			env.Setenv("GOPROXY", "off")
			env.Setenv("GOFLAGS", "-mod=readonly")
			env.Setenv("GOTOOLCHAIN", "local")
			env.Setenv("SEXTANT_ROOT", root)
			env.Setenv("XDG_DATA_HOME", filepath.Join(env.WorkDir, ".data"))
			env.Setenv("XDG_CACHE_HOME", filepath.Join(env.WorkDir, ".cache"))
			env.Setenv("NO_COLOR", "1")
			return nil
		},
		RequireExplicitExec: true,
	})
}

func repoRoot(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	root, err := filepath.Abs(filepath.Join(filepath.Dir(file), "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// goEnv returns what the go command would use for name, so scripts share
// the caller's build and module caches.
func goEnv(name string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	home, _ := os.UserHomeDir()
	switch name {
	case "GOPATH":
		return filepath.Join(home, "go")
	case "GOMODCACHE":
		return filepath.Join(goEnv("GOPATH"), "pkg", "mod")
	case "GOCACHE":
		if d, err := os.UserCacheDir(); err == nil {
			return filepath.Join(d, "go-build")
		}
	case "GOROOT":
		return runtime.GOROOT()
	}
	return ""
}
