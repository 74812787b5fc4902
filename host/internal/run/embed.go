package run

import (
	"context"
	"fmt"

	"github.com/sextant-dev/sextant/sdk"
)

// Embed asks the provider called name for the vectors of req's inputs,
// with the provider's model when req names none, its configuration, its
// timeout, retries and circuit breaker.
//
// # Notes
//
//   - There is no fallback: vectors of two models cannot be compared, so
//     a similarity scored with another provider's would be meaningless.
//   - A provider embeds when its plugin is an sdk.Embedder: a builtin
//     that implements it, or a wasm or process plugin whose Describe
//     answer has Embed (plugin.EmbedderClient). Any other is an error
//     naming the block and its plugin.
//   - Every answer, whatever the transport, is checked
//     (sdk.CheckEmbedding) before it is returned, and so before the
//     caller records it: a wrong count or length, NaN or infinity fails
//     the call and leaves nothing behind.
func (r *Providers) Embed(ctx context.Context, name string, req *sdk.EmbedRequest) (*sdk.EmbedResponse, error) {
	p, ok := r.byName[name]
	if !ok {
		return nil, fmt.Errorf("unknown provider %q", name)
	}
	embed, ok := embedder(p.Plugin)
	if !ok {
		return nil, &sdk.Error{Code: sdk.CodeBadRequest, Message: fmt.Sprintf("providers.%s (plugin %s) offers no embeddings", name, p.Plugin.Describe().Name)}
	}
	in := *req
	if in.Model == "" {
		in.Model = p.Model
	}
	in.Config = p.Config
	var out *sdk.EmbedResponse
	// try makes the attempts (timeout, retries, breaker) of a chat call;
	// the embeddings call rides in its callFunc.
	call := func(ctx context.Context, _ *Provider, _ *sdk.ChatRequest) (*sdk.ChatResponse, error) {
		resp, err := embed(ctx, &in)
		if err != nil {
			return nil, err
		}
		if err := sdk.CheckEmbedding(&in, resp); err != nil {
			return nil, fmt.Errorf("%s answer: %w", sdk.MethodEmbed, err)
		}
		out = resp
		return &sdk.ChatResponse{}, nil
	}
	if _, _, err := r.try(ctx, p, &sdk.ChatRequest{Model: in.Model}, call, nil, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// CanEmbed reports whether the provider called name embeds (see Embed).
func (r *Providers) CanEmbed(name string) bool {
	p, ok := r.byName[name]
	if !ok {
		return false
	}
	_, ok = embedder(p.Plugin)
	return ok
}

type embedFunc func(ctx context.Context, r *sdk.EmbedRequest) (*sdk.EmbedResponse, error)

// embedder returns the Embed of a provider that embeds, seen through the
// host's own wrappers (as streamer does for ChatStream).
func embedder(p sdk.Provider) (embedFunc, bool) {
	switch v := p.(type) {
	case *boundProvider:
		e, ok := v.Provider.(sdk.Embedder)
		if !ok {
			return nil, false
		}
		return func(ctx context.Context, r *sdk.EmbedRequest) (*sdk.EmbedResponse, error) {
			req := *r
			req.Config = v.config
			return e.Embed(ctx, &req)
		}, true
	case *unboundProvider:
		if _, ok := v.Provider.(sdk.Embedder); !ok {
			return nil, false
		}
		return func(context.Context, *sdk.EmbedRequest) (*sdk.EmbedResponse, error) {
			return nil, sdk.Errorf(sdk.CodeAuth, "providers.%s.api_key_env: environment variable %s is not set", v.name, v.env)
		}, true
	case sdk.Embedder:
		return v.Embed, true
	}
	return nil, false
}
