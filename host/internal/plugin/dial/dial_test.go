package dial

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCacheDir: $SEXTANT_CACHE moves the wasm cache; without it the
// cache is the user cache directory's.
func TestCacheDir(t *testing.T) {
	t.Setenv("SEXTANT_CACHE", "/var/cache/sx")
	if got := CacheDir(); got != filepath.Join("/var/cache/sx", "wasm") {
		t.Fatalf("with $SEXTANT_CACHE: %q", got)
	}
	t.Setenv("SEXTANT_CACHE", "")
	t.Setenv("XDG_CACHE_HOME", "/home/u/.cache")
	want := ""
	if d, err := os.UserCacheDir(); err == nil {
		want = filepath.Join(d, "sextant", "wasm")
	}
	if got := CacheDir(); got != want || want == "" {
		t.Fatalf("without: %q, want %q", got, want)
	}
	if n := len(Options(nil)); n != 2 {
		t.Fatalf("Options: %d options, want the wasm and process dialers", n)
	}
}
