package openai

import (
	"context"
	"encoding/json"

	"github.com/sextant-dev/sextant/plugins/internal/llmhttp"
	"github.com/sextant-dev/sextant/sdk"
)

var _ sdk.StreamingProvider = (*Provider)(nil)

// ChatStream implements sdk.StreamingProvider: one POST to
// {base_url}/chat/completions with "stream": true and
// stream_options.include_usage (whatever the block's stream setting),
// whose server-sent events are read as they arrive and whose content
// deltas are handed to onDelta. A server that ignores "stream": true and
// answers in one piece is one delta.
//
// The events are framed as the SSE spec allows (CRLF, LF or lone-CR line
// ends, a leading byte order mark, multi-line data). Errors are typed as
// for Chat; an error event inside the stream, a malformed or oversized
// event and a stream cut short are errors too, never a shorter answer.
// A stream is whole at data: [DONE], or, ended cleanly without it (as
// some OpenAI-compatible servers end theirs), once its choice has a
// finish_reason and the usage chunk arrived.
//
// It needs sdk.HTTPStream, so it works linked into the host (and in a
// process plugin, though the host calls only Chat across that boundary);
// in a wasm module it fails.
func (p *Provider) ChatStream(ctx context.Context, r *sdk.ChatRequest, onDelta func(string) error) (*sdk.ChatResponse, error) {
	cfg, err := parseConfig(r.Config)
	if err != nil {
		return nil, err
	}
	resp, err := p.chatStream(ctx, cfg, r, onDelta)
	return resp, llmhttp.Scrub(err, cfg.apiKey)
}

func (p *Provider) chatStream(ctx context.Context, cfg *config, r *sdk.ChatRequest, onDelta func(string) error) (*sdk.ChatResponse, error) {
	scfg := *cfg
	scfg.stream = true
	req := request(&scfg, r)
	body, err := json.Marshal(req)
	if err != nil {
		return nil, sdk.Errorf(sdk.CodeBadRequest, "%s: encode request: %v", Name, err)
	}
	sr, err := web.PostStream(ctx, cfg.baseURL+"/chat/completions", headers(&scfg), body, credentials(&scfg)...)
	if err != nil {
		return nil, err
	}
	whole := func(resp *sdk.HTTPResponse) (*sdk.ChatResponse, error) {
		if resp.Status < 200 || resp.Status > 299 {
			return nil, refusalError(resp)
		}
		return decodeStream(resp, req)
	}
	return web.Stream(ctx, sr, "", whole, newAssembler(req), onDelta)
}
