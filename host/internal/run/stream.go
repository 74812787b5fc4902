package run

import (
	"context"
	"errors"
	"fmt"

	"github.com/sextant-dev/sextant/sdk"
)

// errStreamStarted marks a failure that came after a streamed answer's
// first delta reached the caller: neither a retry nor a fallback can take
// back what was sent, so the chain stops at it.
var errStreamStarted = errors.New("the answer was already streaming")

// StreamBrokenError is a streamed call that failed after its first delta
// was handed on. It unwraps to the provider's error.
type StreamBrokenError struct {
	Err error
}

func (e *StreamBrokenError) Error() string {
	return fmt.Sprintf("stream broken after the first delta: %v", e.Err)
}

// Unwrap returns the provider's error and errStreamStarted.
func (e *StreamBrokenError) Unwrap() []error { return []error{e.Err, errStreamStarted} }

// ChatStream sends req through the chain of name as Chat does and hands
// each piece of the answer's text to onDelta as it arrives. It returns
// what Chat returns: the assembled answer (the deltas joined), the
// provider that gave it and every call made.
//
// # Notes
//
//   - Retries and fallbacks happen only before the first delta: once one
//     was handed on, a failure ends the call with a *StreamBrokenError
//     (the caller has seen part of an answer no other attempt can
//     continue).
//   - Only a builtin provider that implements sdk.StreamingProvider
//     streams. Any other (a plugin across the process or wasm boundary, a
//     recorded stand-in) answers through Chat, and its whole text is one
//     delta.
//   - An error from onDelta ends the call with that error (as a broken
//     stream once a delta was handed on).
func (r *Providers) ChatStream(ctx context.Context, name string, req *sdk.ChatRequest, onDelta func(delta string) error) (*sdk.ChatResponse, string, []Attempt, error) {
	sent := false
	deliver := func(d string) error {
		if d == "" {
			return nil
		}
		sent = true
		return onDelta(d)
	}
	call := func(ctx context.Context, p *Provider, req *sdk.ChatRequest) (*sdk.ChatResponse, error) {
		var resp *sdk.ChatResponse
		var err error
		if stream, ok := streamer(p.Plugin); ok {
			resp, err = stream(ctx, req, deliver)
		} else if resp, err = p.Plugin.Chat(ctx, req); err == nil {
			err = deliver(resp.Text)
		}
		if err != nil && sent {
			return nil, &StreamBrokenError{Err: err}
		}
		return resp, err
	}
	return r.route(ctx, name, req, call, nil, nil)
}

type streamFunc func(ctx context.Context, r *sdk.ChatRequest, onDelta func(string) error) (*sdk.ChatResponse, error)

// streamer returns the ChatStream of a provider that streams, seen
// through the host's own wrappers.
func streamer(p sdk.Provider) (streamFunc, bool) {
	switch v := p.(type) {
	case *boundProvider:
		s, ok := v.Provider.(sdk.StreamingProvider)
		if !ok {
			return nil, false
		}
		return func(ctx context.Context, r *sdk.ChatRequest, onDelta func(string) error) (*sdk.ChatResponse, error) {
			req := *r
			req.Config = v.config
			return s.ChatStream(ctx, &req, onDelta)
		}, true
	case *unboundProvider:
		return nil, false // Chat names the unset variable
	case sdk.StreamingProvider:
		return v.ChatStream, true
	}
	return nil, false
}
