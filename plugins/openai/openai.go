// Package openai is sextant's provider for the OpenAI Chat Completions API
// and the many servers that speak it: vLLM, Ollama, llama.cpp's server,
// LM Studio, LiteLLM.
//
// A pipeline names it with use = "openai":
//
//	[providers.default]
//	use = "openai"
//	model = "gpt-4o-mini"
//	base_url = "${OPENAI_BASE_URL:-https://api.openai.com/v1}"
//	api_key_env = "OPENAI_API_KEY"          # the key comes from the environment
//	[providers.default.config]
//	stream = true                           # optional: server-sent events
//
// Every request goes through sdk.HTTP (transport.go), so the package works
// unchanged linked into the host, as a process plugin, and as a wasm module
// whose only way out is the host's allow-listed http function.
//
// The package never holds the API key when the host binds it: Describe
// declares sdk.Info.Credentials, the host sends the credential's name
// (Config["api_key_credential"]) and sdk.HTTP asks the host to fill in the
// Authorization header. A key sent the api 1 way (Config["api_key"]) is
// used, never kept, logged or returned, and scrubbed from every error the
// upstream echoes it in. It must not retry either: the host's
// provider chain retries and falls back, honouring the RetryAfter this
// package reports.
package openai

import (
	"context"
	"encoding/json"
	"github.com/sextant-dev/sextant/plugins/internal/llmhttp"

	"github.com/sextant-dev/sextant/sdk"
)

// Name is the provider's plugin name.
const Name = "openai"

// Version is the plugin's version.
const Version = "1.0.0"

// Provider calls an OpenAI-compatible Chat Completions endpoint. It holds
// no state; one value serves any number of concurrent calls.
type Provider struct{}

var _ sdk.Provider = (*Provider)(nil)

// New returns the provider.
func New() *Provider { return &Provider{} }

func init() { sdk.Register(New()) }

// Describe implements sdk.Plugin.
func (*Provider) Describe() sdk.Info {
	return sdk.Info{Name: Name, Kind: sdk.KindProvider, Version: Version, API: sdk.APIVersion,
		Description: "OpenAI Chat Completions and compatible servers (vLLM, Ollama, llama.cpp, LM Studio, LiteLLM)",
		Config:      configFields, Credentials: true}
}

// Chat implements sdk.Provider: one POST to {base_url}/chat/completions.
//
// # Errors
//
// Every failure is an *sdk.Error: 429 is CodeRateLimited with the wait
// from retry-after-ms or Retry-After (a 429 for insufficient_quota is
// CodeAuth: waiting does not cure it); 401, 402 and 403 are CodeAuth;
// other 4xx are CodeBadRequest; 408, 5xx, lost connections and truncated
// or malformed answers are CodeUnavailable; a spent deadline is
// CodeTimeout.
func (p *Provider) Chat(ctx context.Context, r *sdk.ChatRequest) (*sdk.ChatResponse, error) {
	cfg, err := parseConfig(r.Config)
	if err != nil {
		return nil, err
	}
	resp, err := p.chat(ctx, cfg, r)
	return resp, llmhttp.Scrub(err, cfg.apiKey)
}

func (p *Provider) chat(ctx context.Context, cfg *config, r *sdk.ChatRequest) (*sdk.ChatResponse, error) {
	req := request(cfg, r)
	body, err := json.Marshal(req)
	if err != nil {
		return nil, sdk.Errorf(sdk.CodeBadRequest, "%s: encode request: %v", Name, err)
	}
	resp, err := web.Post(ctx, cfg.baseURL+"/chat/completions", headers(cfg), body, credentials(cfg)...)
	if err != nil {
		return nil, err
	}
	if resp.Status < 200 || resp.Status > 299 {
		return nil, refusalError(resp)
	}
	if cfg.stream {
		return decodeStream(resp, req)
	}
	return decodeResponse(resp)
}

// request maps a ChatRequest onto the wire.
func request(cfg *config, r *sdk.ChatRequest) *chatRequest {
	out := &chatRequest{Model: r.Model, Messages: messages(r.Messages), Temperature: r.Temperature, Stop: r.Stop}
	if cfg.tokenParam == paramMaxCompletionTokens {
		out.MaxCompletionTokens = r.MaxTokens
	} else {
		out.MaxTokens = r.MaxTokens
	}
	if r.JSON {
		out.ResponseFormat = &responseFormat{Type: "json_object"}
	}
	if cfg.stream {
		out.Stream, out.StreamOptions = true, &streamOptions{IncludeUsage: true}
	}
	if len(r.Tools) > 0 {
		// tool_choice and parallel_tool_calls are refused without tools.
		out.Tools = make([]tool, len(r.Tools))
		for i, t := range r.Tools {
			out.Tools[i] = tool{Type: "function", Function: function{Name: t.Name, Description: t.Description, Parameters: t.InputSchema}}
		}
		switch r.ToolChoice {
		case "":
		case "auto", "none", "required":
			out.ToolChoice = r.ToolChoice
		default:
			c := namedChoice{Type: "function"}
			c.Function.Name = r.ToolChoice
			out.ToolChoice = c
		}
		out.ParallelToolCalls = r.ParallelToolCalls
	}
	return out
}

// messages maps the conversation onto the wire: an assistant message's
// tool calls as function calls (its content null when it has no text),
// a tool message's answer by tool_call_id. OpenAI has no flag for a
// failed call: IsError reaches the model as the text says it.
func messages(in []sdk.Message) []message {
	out := make([]message, len(in))
	for i := range in {
		m := &in[i]
		content := &m.Content
		if m.Content == "" && len(m.ToolCalls) > 0 {
			content = nil
		}
		out[i] = message{Role: m.Role, Content: content, ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			tc := toolCall{ID: c.ID, Type: "function"}
			tc.Function.Name, tc.Function.Arguments = c.Name, argumentText(c.Arguments)
			out[i].ToolCalls = append(out[i].ToolCalls, tc)
		}
	}
	return out
}

// credentials asks the host for the bearer token when the key was bound
// to it rather than sent.
func credentials(cfg *config) []sdk.HeaderCredential {
	if cfg.apiKey != "" || cfg.credential == "" {
		return nil
	}
	return []sdk.HeaderCredential{{Header: "Authorization", Name: cfg.credential, Prefix: "Bearer "}}
}

func headers(cfg *config) map[string][]string {
	h := map[string][]string{
		"Content-Type": {"application/json"},
		"User-Agent":   {"sextant-" + Name + "/" + Version},
	}
	if cfg.stream {
		h["Accept"] = []string{"text/event-stream"}
	} else {
		h["Accept"] = []string{"application/json"}
	}
	if cfg.apiKey != "" {
		h["Authorization"] = []string{"Bearer " + cfg.apiKey}
	}
	if cfg.organization != "" {
		h["OpenAI-Organization"] = []string{cfg.organization}
	}
	if cfg.project != "" {
		h["OpenAI-Project"] = []string{cfg.project}
	}
	return h
}
