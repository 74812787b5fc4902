package sdk

import (
	"context"
	"io"
)

// StreamingProvider is a Provider that can hand an answer on while it
// arrives. The host's recording proxy uses it to pass a streamed answer
// through to its client token by token; every other caller uses Chat.
//
// Only a provider linked into the host (a builtin) is seen as one: a
// plugin across the process or wasm boundary answers through Chat alone,
// whatever its own Go type implements, and its answer reaches a streaming
// client assembled.
type StreamingProvider interface {
	Provider
	// ChatStream sends one request, as Chat does, and calls onDelta with
	// each piece of the answer's text as it arrives, in order. It returns
	// the assembled answer (the deltas joined, with usage and finish
	// reason) exactly as Chat would have. An error from onDelta ends the
	// call with that error. Failures are *Error values as for Chat.
	ChatStream(ctx context.Context, r *ChatRequest, onDelta func(delta string) error) (*ChatResponse, error)
}

// HTTPStreamResponse is the answer to a request sent with HTTPStream: its
// body is read as it arrives. The caller must close Body.
type HTTPStreamResponse struct {
	Status int
	Header map[string][]string
	Body   io.ReadCloser
}
