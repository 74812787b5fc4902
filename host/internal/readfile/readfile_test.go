package readfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.json")
	if err := os.WriteFile(small, []byte(`{"a":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte(strings.Repeat("x", 2048)), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	haveFIFO := runtime.GOOS != "windows" && syscall.Mkfifo(fifo, 0o644) == nil
	for _, tc := range []struct {
		name, path string
		limit      int64
		want       string // error text; "" for success
		is         error
	}{
		{"regular", small, 1 << 10, "", nil},
		{"at the limit", small, 7, "", nil},
		{"over the limit", big, 1 << 10, "read " + big + ": over the size limit of 1 KiB (2048 bytes)", ErrTooLarge},
		{"directory", dir, 1 << 10, "read " + dir + ": not a regular file (a directory)", ErrNotRegular},
		{"device", os.DevNull, 1 << 10, "read " + os.DevNull + ": not a regular file (a character device)", ErrNotRegular},
		{"fifo", fifo, 1 << 10, "read " + fifo + ": not a regular file (a named pipe)", ErrNotRegular},
		{"missing", filepath.Join(dir, "nope"), 1 << 10, "stat " + filepath.Join(dir, "nope") + ": no such file or directory", os.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.path == fifo && !haveFIFO {
				t.Skip("no named pipes here")
			}
			// Read, and Open for a caller that streams: the same checks.
			for _, read := range []func() ([]byte, error){
				func() ([]byte, error) { return Read(tc.path, tc.limit) },
				func() ([]byte, error) {
					f, err := Open(tc.path, tc.limit)
					if err != nil {
						return nil, err
					}
					defer f.Close()
					return io.ReadAll(f)
				},
			} {
				b, err := read()
				if tc.want == "" {
					if err != nil || string(b) != `{"a":1}` {
						t.Fatalf("got %q, %v", b, err)
					}
					continue
				}
				if err == nil || err.Error() != tc.want || !errors.Is(err, tc.is) {
					t.Fatalf("got %v, want %s", err, tc.want)
				}
			}
		})
	}
}

func TestPrefixAndReadAll(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := Prefix(path, 4); err != nil || string(b) != "0123" {
		t.Fatalf("Prefix: %q, %v", b, err)
	}
	if _, err := Prefix(os.DevNull, 4); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("Prefix of a device: %v", err)
	}
	_, err := ReadAll("stdin", strings.NewReader("0123456789"), 4)
	if err == nil || err.Error() != "read stdin: over the size limit of 4 bytes (more than that)" {
		t.Fatalf("ReadAll: %v", err)
	}
}

func TestTarget(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Symlink("real", filepath.Join(dir, "rel")); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	if err := os.Symlink(filepath.Join(dir, "rel"), filepath.Join(dir, "abs")); err != nil {
		t.Fatal(err)
	}
	os.Symlink("loop", filepath.Join(dir, "loop"))
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(dir, "abs"), real}, // through two links, the last one dangling
		{filepath.Join(dir, "plain"), filepath.Join(dir, "plain")},
		{filepath.Join(dir, "loop"), filepath.Join(dir, "loop")}, // gives up, as the kernel would
	} {
		if got := Target(tc.path); got != tc.want {
			t.Errorf("Target(%s) = %s, want %s", tc.path, got, tc.want)
		}
	}
}
