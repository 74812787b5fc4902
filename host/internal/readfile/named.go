package readfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sextant-dev/sextant/host/internal/suggest"
)

// Missing checks that the file a command was given exists, and says so
// when it does not, named by what (a flag, or the kind of file) with the
// nearest name in the same directory: `--input inputs/invoce.json: no such
// file (did you mean "inputs/invoice.json"?)`, `pipline.toml: read
// pipeline: no such file or directory (did you mean "pipeline.toml"?)`.
// It returns nil for "" and "-" (stdin), and for any other error, which
// whoever opens the file reports.
func Missing(what, path string) error {
	if path == "" || path == "-" {
		return nil
	}
	if _, err := os.Stat(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if strings.HasPrefix(what, "-") {
		return fmt.Errorf("%s %s: no such file%s", what, path, siblingHint(path))
	}
	// a file argument reads as the loader's own error: FILE: read pipeline: …
	return fmt.Errorf("%s: read %s: no such file or directory%s", path, what, siblingHint(path))
}

// Named reads the file the flag what names (--input, --truth), at most
// limit bytes and only a regular file, or stdin for "-". Errors name the
// flag and the file (a missing one as Missing does).
func Named(what, path string, stdin io.Reader, limit int64) ([]byte, error) {
	if path == "-" {
		b, err := ReadAll("stdin", stdin, limit)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		return b, nil
	}
	if err := Missing(what, path); err != nil {
		return nil, err
	}
	b, err := Read(path, limit)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return b, nil
}

// siblingHint suggests the file in path's directory (or, when that is
// missing too, the directory beside it) nearest to the name given.
func siblingHint(path string) string {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && filepath.Clean(dir) != filepath.Dir(filepath.Clean(dir)) {
			if h := siblingDir(filepath.Clean(dir)); h != "" {
				return fmt.Sprintf(" (did you mean %q?)", filepath.Join(h, base))
			}
		}
		return ""
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if c := suggest.Closest(base, names); c != "" {
		return fmt.Sprintf(" (did you mean %q?)", filepath.Join(filepath.Dir(path), c))
	}
	return ""
}

// siblingDir returns the existing directory nearest to the missing dir.
func siblingDir(dir string) string {
	parent := filepath.Dir(dir)
	entries, err := os.ReadDir(parent)
	if err != nil {
		return ""
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	if c := suggest.Closest(filepath.Base(dir), names); c != "" {
		return filepath.Join(parent, c)
	}
	return ""
}
