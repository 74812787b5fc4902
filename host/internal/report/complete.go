package report

import (
	"strings"

	"github.com/sextant-dev/sextant/host/internal/store"
)

// TaskCompletions are the shell completions of a TASK argument: the ids
// of tasks that start with prefix, in the order given, each described by
// its status and pipeline ("ID\tDESCRIPTION", the form cobra's
// completion scripts read).
func TaskCompletions(tasks []store.Task, prefix string) []string {
	var out []string
	for _, t := range tasks {
		if strings.HasPrefix(t.ID, prefix) {
			out = append(out, t.ID+"\t"+string(t.Status)+" "+t.Pipeline)
		}
	}
	return out
}
