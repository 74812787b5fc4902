//go:build wasip1

package sdk

import (
	"context"
	"errors"
)

// HTTPStream is not available in a WebAssembly plugin: the host's http
// function hands over whole bodies only. Use HTTP.
func HTTPStream(context.Context, *HTTPRequest) (*HTTPStreamResponse, error) {
	return nil, errors.New("http stream: not available in a wasm plugin (the host's http function returns whole bodies)")
}
