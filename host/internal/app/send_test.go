package app

import (
	"errors"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/store"
)

// TestMessageDelivery: send needs a message and a task or key, and a task
// on Temporal; what passes is a message delivery carrying the key.
func TestMessageDelivery(t *testing.T) {
	for _, c := range []struct {
		task, message, key string
		temporal           bool
	}{
		{"t1", "", "", false},
		{"", "paid", "", false},
		{"", "paid", "k", true},
	} {
		_, err := MessageDelivery(c.task, c.message, c.key, c.temporal, nil)
		var ue *UsageError
		if !errors.As(err, &ue) {
			t.Errorf("MessageDelivery(%+v) = %v, want a usage error", c, err)
		}
	}
	d, err := MessageDelivery("", "paid", "k", false, map[string]any{"x": 1})
	if err != nil || d.Kind != store.WaitMessage || d.Name != "paid" || d.Key != "k" || d.Vars["x"] != 1 {
		t.Fatalf("MessageDelivery = %+v, %v", d, err)
	}
}
