package routine

import (
	"fmt"
	"io"

	"github.com/sextant-dev/sextant/sdk"
)

// WriteResults prints routine validate's results as text: an ok line on
// out for each routine that loaded, then its warnings on errw, and why
// its names were not checked against the sample input. The problems of
// the routines that did not load are the caller's error to print. It
// reports whether any routine has warnings.
func WriteResults(out, errw io.Writer, results []Result) (warned bool) {
	for _, res := range results {
		warned = warned || len(res.Warnings) > 0
		if !res.OK {
			continue
		}
		fmt.Fprintf(out, "%s: ok (%d nodes)\n", res.File, res.Nodes)
		WriteWarnings(errw, res.Warnings)
		if res.Unchecked != "" {
			fmt.Fprintf(errw, "%s: names not checked against --input: %s\n", res.File, res.Unchecked)
		}
	}
	return warned
}

// WriteWarnings writes warnings to w one per line, as problems are
// written, with "warning: " before the message.
func WriteWarnings(w io.Writer, warns []sdk.Problem) {
	for _, p := range warns {
		p.Message = "warning: " + p.Message
		fmt.Fprintln(w, p.String())
	}
}

// Failed reports whether routine validate's results fail it (exit 2): a
// routine did not load, or strict and one has warnings.
func Failed(results []Result, strict bool) bool {
	for _, res := range results {
		if !res.OK || strict && len(res.Warnings) > 0 {
			return true
		}
	}
	return false
}
