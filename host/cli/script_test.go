package cli

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/sextant-dev/sextant/host/internal/plugintest"
)

func TestMain(m *testing.M) {
	testscript.Main(cleanupM{m}, map[string]func(){"sextant": Main})
}

// cleanupM removes the plugins plugintest built once the tests have run
// (testscript.Main exits the process itself).
type cleanupM struct{ m *testing.M }

func (c cleanupM) Run() int {
	defer plugintest.Cleanup()
	return c.m.Run()
}

// TestScripts runs the CLI scripts in testdata/script with the real
// sextant command. Scripts may build plugins from the repository's sources
// with `go -C $SEXTANT_ROOT build …`; the go command runs offline from
// the module cache.
func TestScripts(t *testing.T) {
	testscript.Run(t, scriptParams(t, filepath.Join(repoRoot(t), "testdata", "script")))
}

// TestScriptsCopyWithCopyrepo keeps scripts from copying repository folders
// with cp: a plain copy takes along the .sextant store that running the
// README's commands leaves in an example folder, and the script then reads
// state it did not make.
func TestScriptsCopyWithCopyrepo(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot(t), "testdata", "script", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts found: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, "$SEXTANT_ROOT") && recursiveCopy.MatchString(line) {
				t.Errorf("%s:%d: copy repository folders with `copyrepo`, not cp: %s", filepath.Base(f), i+1, line)
			}
		}
	}
}

// recursiveCopy matches a recursive cp, which copies whole folders.
var recursiveCopy = regexp.MustCompile(`\bcp\s+-[a-zA-Z]*[rRa]`)

// scriptParams are the parameters every CLI script runs with, for the
// scripts in dir.
func scriptParams(t *testing.T, dir string) testscript.Params {
	root := repoRoot(t)
	return testscript.Params{
		Dir: dir,
		Setup: func(env *testscript.Env) error {
			for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOROOT", "PATH"} {
				env.Setenv(k, goEnv(k))
			}
			env.Setenv("GOPROXY", "off")
			env.Setenv("GOFLAGS", "-mod=readonly")
			env.Setenv("GOTOOLCHAIN", "local")
			env.Setenv("SEXTANT_ROOT", root)
			// Everything a script writes stays in its work dir: the
			// default store is beside each pipeline (copied in), caches
			// and plugin search paths are under $WORK, and HOME is
			// testscript's /no-home.
			env.Setenv("XDG_DATA_HOME", filepath.Join(env.WorkDir, ".data"))
			env.Setenv("XDG_CACHE_HOME", filepath.Join(env.WorkDir, ".cache"))
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(env.WorkDir, ".config"))
			env.Setenv("XDG_STATE_HOME", filepath.Join(env.WorkDir, ".state"))
			env.Setenv("SEXTANT_CACHE", filepath.Join(env.WorkDir, ".cache", "sextant"))
			env.Setenv("NO_COLOR", "1")
			return nil
		},
		Cmds:                map[string]func(ts *testscript.TestScript, neg bool, args []string){"copyrepo": copyRepo, "settask": setTask, "waittask": waitTask, "chop": chopFile},
		RequireExplicitExec: true,
	}
}

// isolate points every directory sextant reads or writes by default
// (store, caches, plugin search path) into a temporary directory for an
// in-process test, so it never sees the user's or leaves anything behind.
func isolate(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	for k, v := range map[string]string{
		"SEXTANT_STORE":       "",
		"SEXTANT_PLUGIN_PATH": "",
		"SEXTANT_CACHE":       filepath.Join(dir, "cache", "sextant"),
		"XDG_CACHE_HOME":      filepath.Join(dir, "cache"),
		"XDG_DATA_HOME":       filepath.Join(dir, "data"),
		"XDG_CONFIG_HOME":     filepath.Join(dir, "config"),
	} {
		t.Setenv(k, v)
	}
}

// copyRepo is the script command `copyrepo SRC DST`: it copies SRC (a file
// or folder of the repository, e.g. pipelines/email-triage) to DST in the
// work dir, leaving out what running the examples leaves behind (the
// .sextant stores beside the pipelines), so a script sees the example as
// committed even after someone ran the README's commands in the checkout.
func copyRepo(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: copyrepo SRC DST")
	}
	src := filepath.Join(ts.Getenv("SEXTANT_ROOT"), filepath.FromSlash(args[0]))
	dst := ts.MkAbs(args[1])
	ts.Check(copyTree(src, dst))
}

// runLeftovers are the names running sextant creates beside a pipeline.
var runLeftovers = map[string]bool{".sextant": true}

// copyTree copies the file or folder src to dst (created as needed),
// skipping runLeftovers and anything that is not a file or folder.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if runLeftovers[d.Name()] && path != src {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case !d.Type().IsRegular():
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(to, b, info.Mode().Perm()); err != nil {
			return fmt.Errorf("copyrepo: %w", err)
		}
		return nil
	})
}

// TestCopyTreeSkipsRunState: what a run leaves beside an example never
// reaches a script's copy of it.
func TestCopyTreeSkipsRunState(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	for _, f := range []string{"pipeline.toml", "inputs/a.json", ".sextant/MANIFEST", "sub/.sextant/000001.vlog"} {
		p := filepath.Join(src, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := copyTree(src, dst); err != nil {
		t.Fatal(err)
	}
	var got []string
	filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dst, p)
			got = append(got, filepath.ToSlash(rel))
		}
		return err
	})
	if want := "inputs/a.json pipeline.toml"; strings.Join(got, " ") != want {
		t.Fatalf("copied %q, want %q", got, want)
	}
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
		if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
			return strings.TrimSpace(string(out))
		}
	}
	return ""
}

// chopFile is the script command `chop FILE N`: it cuts the last N bytes
// off a file (a damaged store's value log).
func chopFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: chop FILE N")
	}
	path := ts.MkAbs(args[0])
	n, err := strconv.ParseInt(args[1], 10, 64)
	ts.Check(err)
	info, err := os.Stat(path)
	ts.Check(err)
	ts.Check(os.Truncate(path, max(0, info.Size()-n)))
}
