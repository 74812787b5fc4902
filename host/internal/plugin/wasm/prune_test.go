package wasm

import (
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/sdk"
)

// TestPruneCache: entries unused for CacheMaxAge go, and the version
// directories they leave empty; recent entries, files the cache does not
// make and directories still holding something stay.
func TestPruneCache(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	old, recent := now.Add(-CacheMaxAge-time.Hour), now.Add(-CacheMaxAge+time.Hour)
	hex64, hex32 := strings.Repeat("ab", 32), strings.Repeat("cd", 16)
	code := "wazero-code/"
	files := map[string]time.Time{
		code + "v1.11.0/wazero-v1.11.0-amd64-linux/" + hex64: old, // an older wazero's, unused
		code + "v1.12.0/wazero-v1.12.0-amd64-linux/" + hex64: old, // in a version dir in use
		"wazero-1.12.0-sextant.1-amd64-linux/" + hex64:       old, // a patched build's
		"sextant-instrument-v1/" + hex64 + ".wasm":           old,
		"sextant-instrument-v1/sums/" + hex32:                old,
		"sextant-instrument-v2/" + hex64 + ".wasm":           recent,
		"sextant-instrument-v2/sums/" + hex32:                recent,
		"sextant-instrument-v2/.tmp-42":                      old,
		"notes.txt":                                          old, // not the cache's
		"other/" + hex64:                                     old,
	}
	for name, mtime := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	// Directories as old as their oldest entry, but the version directory
	// an engine marked as used.
	for _, d := range []string{code + "v1.11.0", "wazero-1.12.0-sextant.1-amd64-linux", "sextant-instrument-v1/sums", "sextant-instrument-v1", "sextant-instrument-v2/sums", "sextant-instrument-v2", "other"} {
		os.Chtimes(filepath.Join(dir, d), old, old)
	}
	os.Chtimes(filepath.Join(dir, code+"v1.12.0"), recent, recent)
	// 3 instrumentation files and 2 machine code directories.
	if n := pruneCache(dir, CacheMaxAge, now, slog.New(slog.DiscardHandler)); n != 5 {
		t.Errorf("pruned %d, want 5", n)
	}
	var left []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != dir {
			rel, _ := filepath.Rel(dir, p)
			left = append(left, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(left)
	want := []string{
		"notes.txt",
		"other", "other/" + hex64,
		"sextant-instrument-v2", "sextant-instrument-v2/" + hex64 + ".wasm", "sextant-instrument-v2/sums", "sextant-instrument-v2/sums/" + hex32,
		"wazero-code",
		code + "v1.12.0", code + "v1.12.0/wazero-v1.12.0-amd64-linux", code + "v1.12.0/wazero-v1.12.0-amd64-linux/" + hex64,
	}
	if strings.Join(left, "\n") != strings.Join(want, "\n") {
		t.Errorf("left:\n%s\nwant:\n%s", strings.Join(left, "\n"), strings.Join(want, "\n"))
	}
}

// TestCacheEntriesMarkedWhenUsed: an Open served from the disk cache marks
// what it used (the wazero version's machine code directory, the
// instrumented module, the recorded sum), so pruning keeps what is in use
// however old it is; and a pruned cache is rebuilt by the next Open.
func TestCacheEntriesMarkedWhenUsed(t *testing.T) {
	path := root("testdata/plugins/wat-gate/gate.wasm")
	dir := t.TempDir()
	check := func() {
		t.Helper()
		m, c := open(t, "wat-gate", path, Config{CacheDir: dir})
		if _, err := c.Check(t.Context(), &sdk.Comparison{}); err != nil {
			t.Fatal(err)
		}
		m.Close(t.Context())
		forgetCache(t, dir) // as in a new process
	}
	files := func() []string {
		var out []string
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				out = append(out, p)
			}
			return nil
		})
		return out
	}
	code := filepath.Join(dir, codeDir, wazeroVersion)
	check()
	if got := files(); len(got) != 3 {
		t.Fatalf("cache files after the first Open: %v, want machine code, instrumented module and sum", got)
	}
	marked, err := filepath.Glob(filepath.Join(dir, "sextant-instrument-v*", "*.wasm"))
	if err != nil || len(marked) != 1 {
		t.Fatalf("instrumented entries: %v, %v", marked, err)
	}
	sums, _ := filepath.Glob(filepath.Join(dir, "sextant-instrument-v*", "sums", "*"))
	marked = append(append(marked, sums...), code)
	if len(marked) != 3 {
		t.Fatalf("entries to mark: %v", marked)
	}
	stale := time.Now().Add(-3 * touchAfter)
	for _, p := range marked {
		os.Chtimes(p, stale, stale)
	}
	check()
	for _, p := range marked {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if !info.ModTime().After(stale.Add(time.Hour)) {
			t.Errorf("%s: not marked as used by an Open served from it (mtime %v)", p, info.ModTime())
		}
	}
	// Unused for longer than CacheMaxAge: pruned, and built again.
	gone := time.Now().Add(-CacheMaxAge - time.Hour)
	for _, p := range marked {
		os.Chtimes(p, gone, gone)
	}
	if n := pruneCache(dir, CacheMaxAge, time.Now(), slog.New(slog.DiscardHandler)); n != 3 {
		t.Fatalf("pruned %d entries, want 3", n)
	}
	if got := files(); len(got) != 0 {
		t.Fatalf("files left after pruning: %v", got)
	}
	check()
	if got := files(); len(got) != 3 {
		t.Errorf("cache files after an Open of a pruned cache: %v", got)
	}
}
