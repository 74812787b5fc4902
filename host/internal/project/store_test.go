package project

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// TestCommonStore: --store beats $SEXTANT_STORE, which beats sextant.toml
// (shown relative to the working directory); with none of them no rule
// applies, and a broken sextant.toml is invalid input.
func TestCommonStore(t *testing.T) {
	root := t.TempDir()
	t.Chdir(root)
	t.Setenv(EnvStore, "")
	if _, ok, err := CommonStore(""); ok || err != nil {
		t.Fatalf("nothing names a store: ok %v, err %v", ok, err)
	}
	write(t, filepath.Join(root, FileName), "store = \"state\"\n")
	if l, ok, err := CommonStore(""); !ok || err != nil || l != (StoreLoc{"state", FromProject}) {
		t.Fatalf("sextant.toml: %+v %v %v", l, ok, err)
	}
	t.Setenv(EnvStore, "/env/store")
	if l, _, _ := CommonStore(""); l != (StoreLoc{"/env/store", FromEnv}) {
		t.Fatalf("$%s: %+v", EnvStore, l)
	}
	if l, _, _ := CommonStore("flag"); l != (StoreLoc{"flag", FromFlag}) {
		t.Fatalf("--store: %+v", l)
	}
	t.Setenv(EnvStore, "")
	write(t, filepath.Join(root, FileName), "store = 3\n")
	if _, _, err := CommonStore(""); !errors.Is(err, sdk.ErrInvalid) {
		t.Fatalf("broken sextant.toml: %v, want sdk.ErrInvalid", err)
	}
}

// TestNeedsFlag: only a store a follow-up command would not find by
// itself needs --store in the hints.
func TestNeedsFlag(t *testing.T) {
	for _, c := range []struct {
		l    StoreLoc
		want bool
	}{
		{StoreLoc{"x", FromFlag}, true},
		{StoreLoc{"x", FromEnv}, false},
		{StoreLoc{"x", FromProject}, false},
		{StoreLoc{".sextant", FromCwd}, false},
		{StoreLoc{"./.sextant", FromPipeline}, false},
		{StoreLoc{"pipelines/a/.sextant", FromPipeline}, true},
	} {
		if got := c.l.NeedsFlag(); got != c.want {
			t.Errorf("%+v.NeedsFlag() = %v, want %v", c.l, got, c.want)
		}
	}
}

func TestPipelineStore(t *testing.T) {
	for _, c := range []struct{ file, dir, want string }{
		{"pipelines/a/pipeline.toml", "", filepath.Join("pipelines", "a", ".sextant")},
		{"pipelines/a/pipeline.toml", "../state", filepath.Join("pipelines", "state")},
		{"pipeline.toml", "/abs/store", "/abs/store"},
	} {
		if got := PipelineStore(c.file, c.dir); got != c.want {
			t.Errorf("PipelineStore(%q, %q) = %q, want %q", c.file, c.dir, got, c.want)
		}
	}
}

// TestNoStore: the error lists what was looked at and, when stores lie
// below, the command to run with the first; hidden folders, vendor and
// anything deeper than three levels are not searched.
func TestNoStore(t *testing.T) {
	root := t.TempDir()
	t.Chdir(root)
	rerun := func(dir string) string { return "sextant runs --store " + dir }
	err := NoStore(true, rerun)
	if msg := err.Error(); !strings.Contains(msg, "--pipeline (not given)") || !strings.Contains(msg, "run a pipeline first") {
		t.Fatalf("no store anywhere: %s", msg)
	}
	if msg := NoStore(false, rerun).Error(); strings.Contains(msg, "--pipeline") {
		t.Fatalf("a command without --pipeline: %s", msg)
	}
	for _, d := range []string{"b/.sextant", "a/x/.sextant", ".hidden/.sextant", "vendor/.sextant", "d/e/f/g/.sextant"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{filepath.Join("a", "x", ".sextant"), filepath.Join("b", ".sextant")}
	if got := StoresBelow(".", 3, 2000); !slices.Equal(got, want) {
		t.Fatalf("StoresBelow = %q, want %q", got, want)
	}
	if got := StoresBelow(".", 3, 1); len(got) != 0 {
		t.Fatalf("StoresBelow with a limit of one directory = %q", got)
	}
	msg := NoStore(false, rerun).Error()
	if !strings.Contains(msg, "stores below this directory: "+strings.Join(want, ", ")) || !strings.HasSuffix(msg, "\nrun: sextant runs --store "+want[0]) {
		t.Fatalf("stores below: %s", msg)
	}
}

func TestCwdStore(t *testing.T) {
	t.Chdir(t.TempDir())
	if _, ok := CwdStore(); ok {
		t.Fatal("CwdStore found a store in an empty directory")
	}
	if err := os.Mkdir(DefaultStore, 0o755); err != nil {
		t.Fatal(err)
	}
	if l, ok := CwdStore(); !ok || l != (StoreLoc{DefaultStore, FromCwd}) {
		t.Fatalf("CwdStore = %+v, %v", l, ok)
	}
}
