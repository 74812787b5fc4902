package sdk

import "context"

// Embedder is a Provider that also turns texts into vectors (OpenAI's
// /v1/embeddings). The host uses it for [[score.assert]] type = "similar":
// the cosine similarity of an output's vector and a reference's.
//
// It is an optional ability, checked with a type assertion, so every
// provider written before it keeps working. As with StreamingProvider,
// only a provider linked into the host (a builtin) is seen as one: a
// plugin across the process or wasm boundary answers Chat alone, and a
// pipeline that asks it for embeddings is told so.
type Embedder interface {
	Provider
	// Embed returns one vector per input, in order. Failures are *Error
	// values as for Chat.
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
