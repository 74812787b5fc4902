package openai

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sextant-dev/sextant/plugins/internal/llmhttp"
	"github.com/sextant-dev/sextant/sdk"
)

var _ sdk.Embedder = (*Provider)(nil)

// embedRequest is the body of POST /embeddings.
type embedRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
}

// embedResponse is its answer.
type embedResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	} `json:"data"`
	Model string    `json:"model"`
	Usage *usage    `json:"usage"`
	Error *apiError `json:"error"`
}

// Embed implements sdk.Embedder: one POST to {base_url}/embeddings with
// every input, answered in input order (the server's index decides, not
// the order of its list). Errors are typed as Chat's.
func (p *Provider) Embed(ctx context.Context, r *sdk.EmbedRequest) (*sdk.EmbedResponse, error) {
	cfg, err := parseConfig(r.Config)
	if err != nil {
		return nil, err
	}
	resp, err := p.embed(ctx, cfg, r)
	return resp, llmhttp.Scrub(err, cfg.apiKey)
}

func (p *Provider) embed(ctx context.Context, cfg *config, r *sdk.EmbedRequest) (*sdk.EmbedResponse, error) {
	if len(r.Input) == 0 {
		return nil, sdk.Errorf(sdk.CodeBadRequest, "%s: embeddings: no input", Name)
	}
	// Float vectors: the default everywhere, said explicitly because
	// some imitations answer base64 when asked nothing.
	body, err := json.Marshal(embedRequest{Model: r.Model, Input: r.Input, EncodingFormat: "float"})
	if err != nil {
		return nil, sdk.Errorf(sdk.CodeBadRequest, "%s: encode request: %v", Name, err)
	}
	h := headers(cfg)
	h["Accept"] = []string{"application/json"} // never a stream
	resp, err := web.Post(ctx, cfg.baseURL+"/embeddings", h, body, credentials(cfg)...)
	if err != nil {
		return nil, err
	}
	if resp.Status < 200 || resp.Status > 299 {
		return nil, refusalError(resp)
	}
	var er embedResponse
	if err := json.Unmarshal(resp.Body, &er); err != nil {
		return nil, web.Malformed(resp, err)
	}
	if er.Error != nil {
		return nil, streamError(er.Error)
	}
	out := &sdk.EmbedResponse{Model: er.Model, Vectors: make([][]float64, len(r.Input))}
	for _, d := range er.Data {
		if d.Index < 0 || d.Index >= len(r.Input) || out.Vectors[d.Index] != nil {
			return nil, web.Malformed(resp, fmt.Errorf("embedding index %d for %d inputs", d.Index, len(r.Input)))
		}
		if len(d.Embedding) == 0 {
			return nil, web.Malformed(resp, fmt.Errorf("embedding %d is empty", d.Index))
		}
		out.Vectors[d.Index] = d.Embedding
	}
	for i, v := range out.Vectors {
		if v == nil {
			return nil, web.Malformed(resp, fmt.Errorf("no embedding for input %d", i))
		}
	}
	if er.Usage != nil {
		out.Usage = sdk.Usage{InputTokens: er.Usage.PromptTokens}
	}
	return out, nil
}
