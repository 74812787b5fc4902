package report

import (
	"encoding/json"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// TestSignalled: the JSON keeps its keys and an empty list; Failed counts
// only failed runs.
func TestSignalled(t *testing.T) {
	b, err := json.Marshal(NewSignalled("go", nil))
	if err != nil || string(b) != `{"received":0,"signal":"go","tasks":[]}` {
		t.Errorf("none: %s %v", b, err)
	}
	s := NewSignalled("go", []*run.Result{{Task: "a", Status: store.StatusFailed}, {Task: "b", Status: store.StatusCompleted}, {Task: "c", Status: store.StatusFailed}})
	if s.Received != 3 || s.Failed() != 2 {
		t.Errorf("got %d received, %d failed; want 3, 2", s.Received, s.Failed())
	}
}
