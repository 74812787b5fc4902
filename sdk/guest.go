package sdk

import (
	"bytes"
	"context"
	"sync"
)

// maxKeptResponse bounds the answer buffer a guest keeps between calls:
// one huge answer does not hold its memory for the instance's life.
const maxKeptResponse = 1 << 20

// guest answers requests as a WebAssembly plugin built with this SDK does
// (guest_wasip1.go): one call at a time, api 2 answers encoded into a
// kept buffer, requests decoded with a kept, trusted interner (only the
// host calls a guest: see interner.trusted), navigator bindings updated
// in place.
type guest struct {
	mu sync.Mutex // held by Handle; the wasm guest calls answer directly
	h  *handler
	s  scratch
}

func newGuest(h *handler) *guest {
	if h.binds != nil {
		h.binds.inPlace = true // one call at a time
	}
	return &guest{h: h, s: scratch{nav: &navReqs{}, in: &interner{trusted: true}, trusted: true}}
}

// answer answers req. An api 2 answer is valid until the next call.
func (g *guest) answer(ctx context.Context, req []byte) []byte {
	if len(req) == 0 || !isMap2(req[0]) {
		return g.h.Handle(ctx, req)
	}
	out := g.h.handle2(ctx, req, &g.s)
	if cap(g.s.e.b) > maxKeptResponse {
		g.s.e.b = nil // out stays as it is; the next answer gets a new buffer
	}
	return out
}

// Handle implements Handler: answer under the lock, copied out.
func (g *guest) Handle(ctx context.Context, req []byte) []byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	return bytes.Clone(g.answer(ctx, req))
}

// ServeGuest returns a Handler that answers as p does compiled into a
// WebAssembly guest with this SDK — the same code path, natively: calls
// are taken one at a time, api 2 answers reuse one buffer and trust the
// host's encoding, a navigator's bindings are updated in place. Serve is
// what a process plugin runs; ServeGuest is for testing and benchmarking
// a plugin's guest side natively (sdktest.Guest).
func ServeGuest(p Plugin) Handler {
	return newGuest(Serve(p).(*handler))
}
