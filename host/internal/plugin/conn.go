package plugin

import (
	"context"
)

// Conn carries encoded request envelopes to one plugin and brings back the
// response envelopes. The wasm and process transports implement it; the
// typed clients (Client) sit on top, so the envelope codec lives in one
// place whatever carries the bytes.
type Conn interface {
	// RoundTrip sends one request envelope and returns the response
	// envelope. Transport failures (a trap, a crash, a deadline) are Go
	// errors naming the plugin and the fault. It keeps no reference to
	// request once it returns (the client reuses that memory).
	RoundTrip(ctx context.Context, request []byte) ([]byte, error)
	// Close releases the plugin (instances, subprocess).
	Close(ctx context.Context) error
}
