package report

import (
	"fmt"
	"io"

	"github.com/sextant-dev/sextant/host/internal/store"
)

// WriteIncidentList writes what sextant incidents prints: "no incidents",
// or their table (WriteIncidents) and how to continue one; storeFlag is
// the --store a follow-up command needs ("" when it finds the store).
func WriteIncidentList(w io.Writer, tasks []store.Task, storeFlag string) error {
	w = termSafe{w} // store text: see termSafe
	if len(tasks) == 0 {
		_, err := fmt.Fprintln(w, "no incidents")
		return err
	}
	if err := WriteIncidents(w, tasks); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "continue: sextant retry TASK [--set NAME=VALUE]...%s\n", storeFlag)
	return err
}
