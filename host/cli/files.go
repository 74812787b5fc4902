package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sextant-dev/sextant/host/internal/jsonpos"
	"github.com/sextant-dev/sextant/host/internal/readfile"
	"github.com/sextant-dev/sextant/host/internal/suggest"
)

// needFile checks that the file a command was given exists. A missing one
// is invalid input (exit 2) named by what (a flag, or "pipeline") with the
// nearest name in the same directory: `--input inputs/invoce.json: no such
// file (did you mean "inputs/invoice.json"?)`, `pipline.toml: read pipeline:
// no such file or directory (did you mean "pipeline.toml"?)`.
func needFile(what, path string) error {
	if path == "" || path == "-" {
		return nil
	}
	_, err := os.Stat(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return nil // other errors are reported by whoever opens it
	}
	if strings.HasPrefix(what, "-") {
		return withInvalid(fmt.Errorf("%s %s: no such file%s", what, path, siblingHint(path)))
	}
	// a file argument reads as the loader's own error: FILE: read pipeline: …
	return withInvalid(fmt.Errorf("%s: read %s: no such file or directory%s", path, what, siblingHint(path)))
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

// readNamed reads the file a flag names (--input, --truth) for what, at
// most limit bytes and only a regular file, or stdin for "-". Errors are
// invalid input (exit 2) naming the flag, the file and the limit.
func (a *app) readNamed(what, path string, limit int64) ([]byte, error) {
	if path == "-" {
		b, err := readfile.ReadAll("stdin", a.stdin, limit)
		if err != nil {
			return nil, withInvalid(fmt.Errorf("%s: %w", what, err))
		}
		return b, nil
	}
	if err := needFile(what, path); err != nil {
		return nil, err
	}
	b, err := readfile.Read(path, limit)
	if err != nil {
		return nil, withInvalid(fmt.Errorf("%s: %w", what, err))
	}
	return b, nil
}

// decodeJSON decodes data, the content of name (a file, or "stdin"), into
// v; a mistake is invalid input positioned as name:line:column
// (jsonpos.Decode).
func decodeJSON(what, name string, data []byte, v any, want string) error {
	if err := jsonpos.Decode(what, name, data, v, want); err != nil {
		return withInvalid(err)
	}
	return nil
}
