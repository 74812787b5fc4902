package report

import (
	"fmt"
	"io"

	"github.com/sextant-dev/sextant/host/internal/store"
)

// WriteCheck writes what sextant store check found in the store at dir:
// each damaged file, task and other record, then a summary line naming
// the salvage command (with storeFlag, the --store a command run from
// here needs) when anything is damaged.
func WriteCheck(w io.Writer, rep *store.CheckReport, dir, storeFlag string) {
	writeDamage(w, rep.Files, rep.Tasks, rep.Keys)
	if rep.Damaged() {
		fmt.Fprintf(w, "store %s is damaged: %d file(s), %d task(s), %d other record(s); %d task(s) read whole\nrun: sextant store salvage --to DIR%s\n",
			dir, len(rep.Files), len(rep.Tasks), len(rep.Keys), rep.TasksRead, storeFlag)
		return
	}
	fmt.Fprintf(w, "store %s: no damage found (%d task(s) read whole)\n", dir, rep.TasksRead)
}

// WriteSalvage writes what sextant store salvage copied into to and
// what it left behind.
func WriteSalvage(w io.Writer, rep *store.SalvageReport, to string) {
	var tasks, keys []*store.DamageError
	for _, d := range rep.Left {
		if d.Task != "" {
			tasks = append(tasks, d)
		} else {
			keys = append(keys, d)
		}
	}
	writeDamage(w, rep.Files, tasks, keys)
	n := rep.Copied
	fmt.Fprintf(w, "salvaged %d task(s) (%d executions, %d spans, %d rewards, %d checkpoints) and %d recording(s) into %s; left behind %d\n",
		n.Tasks, n.Executions, n.Spans, n.Rewards, n.Checkpoints, n.Recordings, to, len(rep.Left))
}

// writeDamage lists damaged files, then tasks, then other records, one a
// line.
func writeDamage(w io.Writer, files, tasks, keys []*store.DamageError) {
	for _, d := range files {
		fmt.Fprintf(w, "damaged file %s: %v\n", d.File, d.Err)
	}
	for _, d := range tasks {
		fmt.Fprintf(w, "damaged task %s: %v\n", d.Task, d)
	}
	for _, d := range keys {
		fmt.Fprintf(w, "damaged record %s: %v\n", d.Key, d)
	}
}
