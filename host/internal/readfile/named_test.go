package readfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMissing: a missing file is named by the flag or kind of file that
// gave it, with the nearest name beside it (or in the directory nearest
// to a missing one); stdin, no file and an existing file are no error.
func TestMissing(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "inputs"), 0o755); err != nil {
		t.Fatal(err)
	}
	invoice := filepath.Join(dir, "inputs", "invoice.json")
	if err := os.WriteFile(invoice, []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ what, path, want string }{
		{"--input", "", ""},
		{"--input", "-", ""},
		{"--input", invoice, ""},
		{"--input", filepath.Join(dir, "inputs", "invoce.json"), "--input " + filepath.Join(dir, "inputs", "invoce.json") + ": no such file (did you mean \"" + invoice + "\"?)"},
		{"pipeline", filepath.Join(dir, "input", "invoice.json"), filepath.Join(dir, "input", "invoice.json") + ": read pipeline: no such file or directory (did you mean \"" + invoice + "\"?)"},
		{"--truth", filepath.Join(dir, "zzzzzzzz"), "--truth " + filepath.Join(dir, "zzzzzzzz") + ": no such file"},
	} {
		err := Missing(c.what, c.path)
		if got := ""; err != nil {
			got = err.Error()
			if got != c.want {
				t.Errorf("Missing(%q, %q) = %q, want %q", c.what, c.path, got, c.want)
			}
		} else if c.want != "" {
			t.Errorf("Missing(%q, %q): no error, want %q", c.what, c.path, c.want)
		}
	}
}

func TestNamed(t *testing.T) {
	b, err := Named("--input", "-", strings.NewReader(`{"a":1}`), 1<<10)
	if err != nil || string(b) != `{"a":1}` {
		t.Fatalf("stdin: %q, %v", b, err)
	}
	if _, err := Named("--input", "-", strings.NewReader(strings.Repeat("x", 20)), 10); !errors.Is(err, ErrTooLarge) || !strings.HasPrefix(err.Error(), "--input: read stdin: ") {
		t.Fatalf("stdin over the limit: %v", err)
	}
	if _, err := Named("--truth", os.DevNull, nil, 10); !errors.Is(err, ErrNotRegular) || !strings.HasPrefix(err.Error(), "--truth: ") {
		t.Fatalf("a device: %v", err)
	}
	if _, err := Named("--truth", filepath.Join(t.TempDir(), "nope.json"), nil, 10); err == nil || !strings.Contains(err.Error(), ": no such file") {
		t.Fatalf("a missing file: %v", err)
	}
}
