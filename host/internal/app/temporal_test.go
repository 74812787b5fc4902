//go:build !notemporal

package app

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/temporal/temporaltest"
)

// TestOpenTemporalFirst: a Temporal address decides before the store is
// looked at: a store that does not exist is neither refused nor created,
// and a front end that does not answer is the error.
func TestOpenTemporalFirst(t *testing.T) {
	f := newFixture(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = Open(ctx, Target{Store: f.store, Temporal: TemporalTarget{Addr: addr, Namespace: "default"}}, options())
	if err == nil || errors.Is(err, os.ErrNotExist) {
		t.Fatalf("open with a Temporal front end that does not answer: %v, want its dial error", err)
	}
	if _, err := os.Stat(f.store); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a Temporal open touched the store %s: %v", f.store, err)
	}
}

// TestOpenTemporal: with a dev server, the backend is Temporal's; what
// acts on the workers' store is refused, naming the way without
// --temporal.
func TestOpenTemporal(t *testing.T) {
	srv := temporaltest.Start(t)
	f := newFixture(t)
	b := open(t, Target{Store: f.store, Temporal: TemporalTarget{Addr: srv.HostPort, Namespace: srv.Namespace}})
	if b.Kind() != Temporal {
		t.Fatalf("kind %s, want temporal", b.Kind())
	}
	if _, err := b.Retry(context.Background(), "t1", nil); !errors.As(err, new(*UsageError)) {
		t.Fatalf("retry on Temporal: %v, want a usage error", err)
	}
	if _, err := b.Send(context.Background(), "", run.Delivery{Name: "paid", Key: "k"}); !errors.As(err, new(*UsageError)) {
		t.Fatalf("a keyed message on Temporal: %v, want a usage error", err)
	}
	if _, err := os.Stat(f.store); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a Temporal open touched the store %s: %v", f.store, err)
	}
}
