package project

import (
	"os"
	"path/filepath"
	"testing"
)

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFind: the nearest sextant.toml above a directory wins, as git finds
// .git; its store is relative to the file.
func TestFind(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, FileName), "store = \"state\"\n")
	write(t, filepath.Join(root, "a", "b", FileName), "# no store here\n")
	deep := filepath.Join(root, "a", "b", "c")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := Find(filepath.Join(root, "a"))
	if err != nil || f == nil {
		t.Fatalf("Find: %v, %v", f, err)
	}
	if got, want := f.StoreDir(), filepath.Join(root, "state"); got != want {
		t.Errorf("StoreDir = %q, want %q", got, want)
	}
	f, err = Find(deep)
	if err != nil || f == nil || f.Store != "" || f.StoreDir() != "" {
		t.Fatalf("nearest file without a store: %+v, %v", f, err)
	}
	if f, err := Find(t.TempDir()); err != nil || f != nil {
		// a temporary directory has no sextant.toml above it on a sane machine
		t.Logf("found %v above a fresh temp dir (%v)", f, err)
	}
}

func TestLoadErrors(t *testing.T) {
	for name, tc := range map[string]struct{ body, want string }{
		"unknown key": {"# x\nstor = \"s\"\n", ":2: stor: unknown key (did you mean \"store\"?)"},
		"wrong type":  {"store = 3\n", ":1: store: "},
		"empty":       {"store = \"\"\n", ":1: store: empty (leave the key out to use the default)"},
		"syntax":      {"store = \n", ":1"},
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), FileName)
			write(t, p, tc.body)
			_, err := Load(p)
			if err == nil {
				t.Fatal("no error")
			}
			if want := p + tc.want; len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
				t.Fatalf("error %q, want prefix %q", err, want)
			}
		})
	}
}
