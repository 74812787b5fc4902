package run_test

import (
	"errors"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/sdk"
)

// TestMessageStart: a message starts the start event that waits for it,
// by name or id; one no start event waits for names those there are.
func TestMessageStart(t *testing.T) {
	r := &sdk.Routine{Starts: []string{"plain", "byOrder"}, Nodes: []sdk.Node{
		{ID: "plain"},
		{ID: "byOrder", Event: &sdk.EventDef{Type: sdk.EventMessage, Name: "order-placed"}},
	}}
	for _, m := range []string{"order-placed", "byOrder"} {
		if got, err := run.MessageStart(r, m); err != nil || got != "byOrder" {
			t.Errorf("%s: %q %v, want byOrder", m, got, err)
		}
	}
	if got, err := run.MessageStart(r, ""); err != nil || got != "" {
		t.Errorf("no message: %q %v", got, err)
	}
	_, err := run.MessageStart(r, "refund")
	if !errors.Is(err, sdk.ErrInvalid) || err.Error() != `--message "refund": no message start event for it (the routine starts on "order-placed")` {
		t.Errorf("unknown message: %v", err)
	}
	_, err = run.MessageStart(&sdk.Routine{Starts: []string{"plain"}, Nodes: []sdk.Node{{ID: "plain"}}}, "x")
	if !errors.Is(err, sdk.ErrInvalid) || err.Error() != `--message "x": the routine has no message start event` {
		t.Errorf("no message start: %v", err)
	}
}
