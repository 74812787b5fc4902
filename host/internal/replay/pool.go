package replay

import (
	"context"
	"sync"

	"github.com/sextant-dev/sextant/host/internal/run"
)

// Pool keeps the plugins replay workers opened, between Runs: an
// evolution round replays the baseline and then each candidate over the
// same pipeline, and with a Pool its workers open their navigator and
// providers once for the round instead of once per replay. A Prepared is
// never shared by two workers at a time. It is safe for concurrent use.
type Pool struct {
	open func(ctx context.Context) (*run.Prepared, error)

	mu     sync.Mutex
	idle   []*run.Prepared
	closed bool
}

// NewPool returns a pool that opens with open (a Config.Prepare) when it
// holds no idle Prepared.
func NewPool(open func(ctx context.Context) (*run.Prepared, error)) *Pool {
	return &Pool{open: open}
}

// Prepare returns an idle Prepared, or opens one.
func (p *Pool) Prepare(ctx context.Context) (*run.Prepared, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 && !p.closed {
		prep := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return prep, nil
	}
	p.mu.Unlock()
	return p.open(ctx)
}

// release keeps prep for the next Prepare; after Close it closes it.
func (p *Pool) release(ctx context.Context, prep *run.Prepared) {
	p.mu.Lock()
	if !p.closed {
		p.idle = append(p.idle, prep)
		prep = nil
	}
	p.mu.Unlock()
	if prep != nil {
		prep.Close(ctx)
	}
}

// Close closes the idle Prepared; those a Run holds are closed when it
// ends.
func (p *Pool) Close(ctx context.Context) {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, prep := range idle {
		prep.Close(ctx)
	}
}
