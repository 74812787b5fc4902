package app

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// TestDecideOnUnknown: a decision on a review request the store lacks is
// refused and says nothing.
func TestDecideOnUnknown(t *testing.T) {
	f := newFixture(t)
	b := open(t, Target{Store: f.store, Create: true})
	var out bytes.Buffer
	req := DecideRequest{ID: "4b2e979dbf70", By: "ana", Now: time.Now()}
	if err := DecideOn(context.Background(), &out, b, req); err == nil || out.Len() > 0 {
		t.Fatalf("unknown review: %v, wrote %q", err, out.String())
	}
}
