package cli

import (
	"github.com/sextant-dev/sextant/host/internal/readfile"
)

// needFile checks that the file a command was given exists: a missing
// one is invalid input (exit 2) named by what, with the nearest name
// (readfile.Missing).
func needFile(what, path string) error {
	if err := readfile.Missing(what, path); err != nil {
		return withInvalid(err)
	}
	return nil
}

// readNamed reads the file a flag names, or stdin for "-"
// (readfile.Named); errors are invalid input (exit 2).
func (a *app) readNamed(what, path string, limit int64) ([]byte, error) {
	b, err := readfile.Named(what, path, a.stdin, limit)
	if err != nil {
		return nil, withInvalid(err)
	}
	return b, nil
}
