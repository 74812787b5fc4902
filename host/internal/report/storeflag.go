package report

import (
	"strings"

	"github.com/sextant-dev/sextant/host/internal/project"
)

// StoreFlag returns the --store argument (with its leading space) a
// follow-up command run from the same directory needs to reach the store
// at l, or "" when that command finds it by itself.
func StoreFlag(l project.StoreLoc) string {
	if !l.NeedsFlag() {
		return ""
	}
	return " --store " + ShellQuote(l.Dir)
}

// CommandLine is the command line sextant was started with (args after
// the program name), quoted for a shell.
func CommandLine(args []string) string {
	parts := []string{"sextant"}
	for _, s := range args {
		parts = append(parts, ShellQuote(s))
	}
	return strings.Join(parts, " ")
}
