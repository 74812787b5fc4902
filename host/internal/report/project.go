package report

import (
	"fmt"
	"io"
)

// WriteProjectWritten writes what sextant init prints: the files it wrote
// into dir and the command that runs the new project, from here.
func WriteProjectWritten(w io.Writer, dir string, files []string) error {
	fmt.Fprintf(w, "wrote %d files in %s:\n", len(files), dir)
	for _, f := range files {
		fmt.Fprintf(w, "  %s\n", f)
	}
	run := "sextant run pipeline.toml --input inputs/refund.json --truth '{\"action\":\"refund\"}'"
	if dir != "." {
		run = "cd " + ShellQuote(dir) + " && " + run
	}
	_, err := fmt.Fprintf(w, "next: %s\n", run)
	return err
}
