// Package anthropic is sextant's provider for Anthropic's Messages API.
//
// A pipeline names it with use = "anthropic":
//
//	[providers.claude]
//	use = "anthropic"
//	model = "claude-sonnet-4-5"
//	api_key_env = "ANTHROPIC_API_KEY"       # the key comes from the environment
//	max_tokens = 2048                       # default 1024; the API requires one
//
// System messages go to the request's top-level system field. JSON mode
// (the Messages API has no response_format) adds an instruction to the
// system prompt and prefills the answer with "{", which the model then
// continues; the "{" is put back in front of the returned text. Set
// json_prefill = false in the block's config table for models that refuse
// a prefilled answer; the instruction alone remains.
//
// Every request goes through sdk.HTTP (transport.go), so the package works
// unchanged linked into the host, as a process plugin, and as a wasm module
// whose only way out is the host's allow-listed http function.
//
// The package never holds the API key when the host binds it: Describe
// declares sdk.Info.Credentials, the host sends the credential's name
// (Config["api_key_credential"]) and sdk.HTTP asks the host to fill in the
// x-api-key header. A key sent the api 1 way (Config["api_key"]) is used,
// never kept, logged or returned, and scrubbed from every error the
// upstream echoes it in. It must not retry either: the host's
// provider chain retries and falls back, honouring the RetryAfter this
// package reports.
package anthropic

import (
	"context"
	"encoding/json"
	"github.com/sextant-dev/sextant/plugins/internal/llmhttp"

	"github.com/sextant-dev/sextant/sdk"
)

// Name is the provider's plugin name.
const Name = "anthropic"

// Version is the plugin's version.
const Version = "1.0.0"

// JSONInstruction is appended to the system prompt in JSON mode.
const JSONInstruction = "Answer with a single JSON object and nothing else: no prose before or after it, no code fences."

// Provider calls the Messages API. It holds no state; one value serves any
// number of concurrent calls.
type Provider struct{}

var _ sdk.Provider = (*Provider)(nil)

// New returns the provider.
func New() *Provider { return &Provider{} }

func init() { sdk.Register(New()) }

// Describe implements sdk.Plugin.
func (*Provider) Describe() sdk.Info {
	return sdk.Info{Name: Name, Kind: sdk.KindProvider, Version: Version, API: sdk.APIVersion,
		Description: "Anthropic Messages API (Claude)",
		Config:      configFields, Credentials: true}
}

// Chat implements sdk.Provider: one POST to {base_url}/v1/messages.
//
// # Errors
//
// Every failure is an *sdk.Error: 429 is CodeRateLimited with the wait from
// Retry-After; 529 (overloaded), 408, 5xx, lost connections and truncated
// or malformed answers are CodeUnavailable (keeping a Retry-After for the
// host's backoff); 401, 402 and 403 are CodeAuth, as is a missing key;
// other 4xx, a missing model and an unknown message role are
// CodeBadRequest; a spent deadline is CodeTimeout.
func (p *Provider) Chat(ctx context.Context, r *sdk.ChatRequest) (*sdk.ChatResponse, error) {
	cfg, err := parseConfig(r.Config)
	if err != nil {
		return nil, err
	}
	resp, err := p.chat(ctx, cfg, r)
	return resp, llmhttp.Scrub(err, cfg.apiKey)
}

func (p *Provider) chat(ctx context.Context, cfg *config, r *sdk.ChatRequest) (*sdk.ChatResponse, error) {
	c, err := prepare(cfg, r, false)
	if err != nil {
		return nil, err
	}
	resp, err := web.Post(ctx, cfg.baseURL+"/v1/messages", c.header, c.body, c.creds...)
	if err != nil {
		return nil, err
	}
	if resp.Status < 200 || resp.Status > 299 {
		return nil, refusalError(resp)
	}
	return decodeResponse(resp, c.prefix)
}

// prepared is one request ready to send.
type prepared struct {
	body   []byte
	header map[string][]string
	creds  []sdk.HeaderCredential
	prefix string // the text the answer is prefilled with
}

// prepare encodes r, streamed or not, with its headers.
func prepare(cfg *config, r *sdk.ChatRequest, stream bool) (*prepared, error) {
	if cfg.apiKey == "" && cfg.credential == "" {
		return nil, sdk.Errorf(sdk.CodeAuth, "%s: no API key (set api_key_env in the provider block)", Name)
	}
	req, prefix, err := request(cfg, r)
	if err != nil {
		return nil, err
	}
	req.Stream = stream
	body, err := json.Marshal(req)
	if err != nil {
		return nil, sdk.Errorf(sdk.CodeBadRequest, "%s: encode request: %v", Name, err)
	}
	accept := "application/json"
	if stream {
		accept = "text/event-stream"
	}
	h := map[string][]string{
		"Content-Type":      {"application/json"},
		"Accept":            {accept},
		"User-Agent":        {"sextant-" + Name + "/" + Version},
		"Anthropic-Version": {APIVersion},
	}
	var creds []sdk.HeaderCredential
	if cfg.apiKey != "" {
		h["X-Api-Key"] = []string{cfg.apiKey}
	} else {
		creds = []sdk.HeaderCredential{{Header: "X-Api-Key", Name: cfg.credential}}
	}
	return &prepared{body: body, header: h, creds: creds, prefix: prefix}, nil
}

// request maps a ChatRequest onto the wire. prefix is the text the answer
// is prefilled with (JSON mode).
func request(cfg *config, r *sdk.ChatRequest) (req *messagesRequest, prefix string, err error) {
	if r.Model == "" {
		return nil, "", sdk.Errorf(sdk.CodeBadRequest, "%s: no model (set model in the provider block)", Name)
	}
	req = &messagesRequest{Model: r.Model, MaxTokens: r.MaxTokens, Temperature: r.Temperature,
		StopSequences: r.Stop, Messages: make([]message, 0, len(r.Messages)+1)}
	if req.MaxTokens <= 0 {
		req.MaxTokens = DefaultMaxTokens
	}
	var system []string
	for i, m := range r.Messages {
		switch m.Role {
		case "system":
			system = append(system, m.Content)
		case "user":
			req.Messages = append(req.Messages, message{Role: m.Role, Content: m.Content})
		case "assistant":
			req.Messages = append(req.Messages, assistant(&r.Messages[i]))
		case "tool":
			// Results go back in a user turn, one tool_result block each;
			// the results of one round share the turn.
			b := block{Type: "tool_result", ToolUseID: m.ToolCallID, Content: &r.Messages[i].Content, IsError: m.IsError}
			if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "user" {
				if blocks, ok := req.Messages[n-1].Content.([]block); ok && blocks[0].Type == "tool_result" {
					req.Messages[n-1].Content = append(blocks, b)
					continue
				}
			}
			req.Messages = append(req.Messages, message{Role: "user", Content: []block{b}})
		default:
			return nil, "", sdk.Errorf(sdk.CodeBadRequest, "%s: message %d: role %q not supported (want system, user, assistant or tool)", Name, i+1, m.Role)
		}
	}
	if r.JSON {
		system = append(system, JSONInstruction)
		if n := len(req.Messages); cfg.prefill && n > 0 && req.Messages[n-1].Role == "user" {
			prefix = "{"
			req.Messages = append(req.Messages, message{Role: "assistant", Content: prefix})
		}
	}
	req.System = joinSystem(system)
	if len(r.Tools) > 0 {
		req.Tools, req.ToolChoice = tools(r)
	}
	return req, prefix, nil
}

// assistant maps an assistant message: its text, and its tool calls as
// tool_use blocks after it.
func assistant(m *sdk.Message) message {
	if len(m.ToolCalls) == 0 {
		return message{Role: "assistant", Content: m.Content}
	}
	blocks := make([]block, 0, len(m.ToolCalls)+1)
	if m.Content != "" {
		blocks = append(blocks, block{Type: "text", Text: m.Content})
	}
	for _, c := range m.ToolCalls {
		blocks = append(blocks, block{Type: "tool_use", ID: c.ID, Name: c.Name, Input: input(c.Arguments)})
	}
	return message{Role: "assistant", Content: blocks}
}

// tools maps the offered tools and the choice among them: "required" is
// any, a tool's name is tool; ParallelToolCalls false is
// disable_parallel_tool_use (which none does not take).
func tools(r *sdk.ChatRequest) ([]tool, *toolChoice) {
	out := make([]tool, len(r.Tools))
	for i, t := range r.Tools {
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`) // required by the API
		}
		out[i] = tool{Name: t.Name, Description: t.Description, InputSchema: schema}
	}
	var c *toolChoice
	switch r.ToolChoice {
	case "":
	case "auto", "none":
		c = &toolChoice{Type: r.ToolChoice}
	case "required":
		c = &toolChoice{Type: "any"}
	default:
		c = &toolChoice{Type: "tool", Name: r.ToolChoice}
	}
	if p := r.ParallelToolCalls; p != nil && !*p && (c == nil || c.Type != "none") {
		if c == nil {
			c = &toolChoice{Type: "auto"}
		}
		c.DisableParallelToolUse = true
	}
	return out, c
}

func joinSystem(parts []string) string {
	out := ""
	for _, p := range parts {
		if p == "" {
			continue
		}
		if out != "" {
			out += "\n\n"
		}
		out += p
	}
	return out
}
