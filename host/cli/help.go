package cli

import (
	"embed"
	"strings"
)

// helpFS holds the long help of the commands whose text outgrew a Go
// string: help/NAME.txt is the Long of the command NAME (--help, the
// generated reference).
//
//go:embed help/*.txt
var helpFS embed.FS

// help is the long help of command name; a missing text is a bug that
// every test run finds at start-up.
func help(name string) string {
	b, err := helpFS.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic("cli: no help/" + name + ".txt")
	}
	return strings.TrimSuffix(string(b), "\n")
}
