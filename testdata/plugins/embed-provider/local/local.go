// Package local is a provider that embeds with a model of its own, as a
// third-party plugin wrapping a local embedding model would: each text's
// words are hashed into a vector of Config["dims"] numbers (default 16),
// so the same words give the same direction and texts sharing no word
// are orthogonal. Chat answers the last message back. Config["mode"]
// makes Embed answer wrongly on purpose, for the host's checks:
//
//	short   the last vector one number shorter than the others
//	count   one vector fewer than there are inputs
//	wide    vectors of sdk.MaxEmbedDimensions+1 numbers
//	fail    an unavailable error
//
// Config["calls"] names a file to which each Embed call appends one line
// (process builds; a wasm module has no filesystem).
package local

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"strings"

	"github.com/sextant-dev/sextant/sdk"
)

// Name is the plugin's name.
const Name = "embed-provider"

// Local is the provider.
type Local struct{}

var _ sdk.Embedder = Local{}

// Describe implements sdk.Plugin.
func (Local) Describe() sdk.Info {
	return sdk.Info{Name: Name, Kind: sdk.KindProvider, Version: "0.1.0", API: sdk.APIVersion,
		Description: "embeds texts with a local bag-of-words model (tests)",
		Config: []sdk.ConfigField{
			{Name: "dims", Type: "number", Default: 16, Doc: "vector length"},
			{Name: "mode", Type: "string", Doc: "short | count | wide | fail: answer wrongly on purpose"},
			{Name: "calls", Type: "string", Doc: "file to append a line to per embeddings call"},
			{Name: "answer", Type: "string", Doc: "process builds: this exact response envelope to provider.embed"},
			{Name: "answer_bytes", Type: "number", Doc: "process builds: a valid-looking answer of this many bytes"},
		}}
}

// Chat implements sdk.Provider: the last message's text.
func (Local) Chat(_ context.Context, r *sdk.ChatRequest) (*sdk.ChatResponse, error) {
	text := ""
	if n := len(r.Messages); n > 0 {
		text = r.Messages[n-1].Content
	}
	return &sdk.ChatResponse{Text: text, FinishReason: "stop", Model: r.Model}, nil
}

// Embed implements sdk.Embedder.
func (Local) Embed(_ context.Context, r *sdk.EmbedRequest) (*sdk.EmbedResponse, error) {
	dims := 16
	if d, ok := r.Config["dims"].(float64); ok && d >= 1 {
		dims = int(d)
	}
	if path, _ := r.Config["calls"].(string); path != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, fmt.Errorf("calls: %w", err)
		}
		fmt.Fprintf(f, "embed %s %q\n", r.Model, r.Input)
		f.Close()
	}
	mode, _ := r.Config["mode"].(string)
	switch mode {
	case "wide":
		dims = sdk.MaxEmbedDimensions + 1
	case "fail":
		return nil, sdk.Errorf(sdk.CodeUnavailable, "the local model is not loaded")
	}
	out := &sdk.EmbedResponse{Model: r.Model}
	for _, text := range r.Input {
		v := make([]float64, dims)
		words := strings.Fields(strings.ToLower(text))
		for _, w := range words {
			h := fnv.New32a()
			h.Write([]byte(w))
			v[int(h.Sum32()%uint32(dims))]++
		}
		out.Vectors = append(out.Vectors, v)
		out.Usage.InputTokens += len(words)
	}
	switch mode {
	case "short":
		last := out.Vectors[len(out.Vectors)-1]
		out.Vectors[len(out.Vectors)-1] = last[:len(last)-1]
	case "count":
		out.Vectors = out.Vectors[:len(out.Vectors)-1]
	}
	return out, nil
}
