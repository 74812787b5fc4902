package sdk

import (
	"context"
	"fmt"
	"math"
)

// Embedder is a Provider that also turns texts into vectors (OpenAI's
// /v1/embeddings, a local embedding model). The host uses it for
// [[score.assert]] type = "similar": the cosine similarity of an output's
// vector and a reference's.
//
// It is an optional ability, checked with a type assertion, so every
// provider written before it keeps working. It crosses every transport:
// Serve answers provider.embed for a Provider that implements it and says
// so in its Describe answer (Info.Embed), and the host's client of such a
// plugin is an Embedder in turn (EmbedderClient). A plugin author writes
// the one method; see PROTOCOL.md, "Embeddings".
type Embedder interface {
	Provider
	// Embed returns one vector per input, in order, all of one length.
	// Failures are *Error values as for Chat.
	Embed(ctx context.Context, r *EmbedRequest) (*EmbedResponse, error)
}

// EmbedRequest asks for the vectors of some texts.
type EmbedRequest struct {
	Input []string `json:"input"`
	Model string   `json:"model,omitempty"`
	// Config is the provider's block from the pipeline, as in
	// ChatRequest; it is not part of the canonical request hash.
	Config map[string]any `json:"config,omitempty"`
}

// EmbedResponse is a provider's vectors: Vectors[i] is Input[i]'s.
type EmbedResponse struct {
	Vectors [][]float64 `json:"vectors"`
	Usage   Usage       `json:"usage"`
	Model   string      `json:"model,omitempty"`
}

// The bounds of an embeddings answer, whatever the transport. The host
// refuses an answer outside them (CheckEmbedding; MaxEmbedResponse before
// a wire answer is decoded), so a plugin's mistake fails the call instead
// of filling memory or the store.
const (
	// MaxEmbedDimensions bounds one vector's length: four times the widest
	// embedding models' (OpenAI's 3072, others' 4096 to 12288 are within).
	MaxEmbedDimensions = 1 << 16
	// MaxEmbedResponse bounds a provider.embed response envelope: room for
	// the vectors the host asks for (two) at MaxEmbedDimensions, each
	// number in its longest JSON spelling, with ample slack.
	MaxEmbedResponse = 16 << 20
)

// CheckEmbedding reports the first fault of resp as the answer to req:
// a vector count other than the input count, an empty vector or one over
// MaxEmbedDimensions, vectors of different lengths, a number that is NaN
// or infinite, or negative usage. The host calls it on every provider's
// answer before it is used or recorded.
func CheckEmbedding(req *EmbedRequest, resp *EmbedResponse) error {
	if resp == nil {
		return fmt.Errorf("no answer")
	}
	if len(resp.Vectors) != len(req.Input) {
		return fmt.Errorf("%d vectors for %d inputs", len(resp.Vectors), len(req.Input))
	}
	for i, v := range resp.Vectors {
		switch {
		case len(v) == 0:
			return fmt.Errorf("vector %d is empty", i)
		case len(v) > MaxEmbedDimensions:
			return fmt.Errorf("vector %d has %d dimensions, over the limit of %d", i, len(v), MaxEmbedDimensions)
		case i > 0 && len(v) != len(resp.Vectors[0]):
			return fmt.Errorf("vector %d has %d dimensions, vector 0 has %d", i, len(v), len(resp.Vectors[0]))
		}
		for j, x := range v {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("vector %d, dimension %d: %v is not a finite number", i, j, x)
			}
		}
	}
	if resp.Usage.InputTokens < 0 || resp.Usage.OutputTokens < 0 {
		return fmt.Errorf("negative usage (%d input, %d output tokens)", resp.Usage.InputTokens, resp.Usage.OutputTokens)
	}
	return nil
}
