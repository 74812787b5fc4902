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
