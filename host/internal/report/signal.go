package report

import (
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// Signalled is sextant signal's --json result: the signal and the runs
// that received it (fields in the order the JSON has always had).
type Signalled struct {
	Received int           `json:"received"`
	Signal   string        `json:"signal"`
	Tasks    []*run.Result `json:"tasks"`
}

// NewSignalled is the result of broadcasting name to results' runs;
// no receiver is an empty list, not null.
func NewSignalled(name string, results []*run.Result) Signalled {
	if results == nil {
		results = []*run.Result{}
	}
	return Signalled{Received: len(results), Signal: name, Tasks: results}
}

// Failed counts the runs the signal continued that then failed.
func (s Signalled) Failed() int {
	n := 0
	for _, res := range s.Tasks {
		if res.Status == store.StatusFailed {
			n++
		}
	}
	return n
}
