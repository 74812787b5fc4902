package sdk

import (
	"context"
	"encoding/json"
)

// Provider answers chat requests: an LLM behind an API, or a scripted stand-in.
type Provider interface {
	Plugin
	// Chat sends one request. Failures should be *Error values with a
	// Code (rate limited, timeout, auth, bad request, unavailable) so the
	// host can retry or fall back. Chat must not keep r, nor any map or
	// slice it holds, once it returns: r.Vars is the run's own variables,
	// which the host writes in place at later steps.
	Chat(ctx context.Context, r *ChatRequest) (*ChatResponse, error)
}

// The Config keys through which a provider receives its API key.
const (
	// ConfigAPIKeyCredential holds the name of the credential (the
	// variable the pipeline's api_key_env names) that the plugin asks
	// HTTP to put into its request headers; see HTTPRequest.Credentials.
	// Sent to plugins whose Info.Credentials is set.
	ConfigAPIKeyCredential = "api_key_credential"
	// ConfigAPIKey holds the API key itself. Sent only to plugins that do
	// not declare Info.Credentials (api 1 compatibility).
	ConfigAPIKey = "api_key"
)

// The Config keys through which a provider receives the rules file a
// pipeline's provider block names (`rules = "…"`): the scripted provider's
// answers. A provider that takes none ignores them.
const (
	// ConfigRules holds the rules file's text.
	ConfigRules = "rules_toml"
	// ConfigRulesFile holds the rules file's name, slash-separated, for
	// the positions of problems in it.
	ConfigRulesFile = "rules_file"
)

// Message is one chat message.
type Message struct {
	Role    string `json:"role"` // system | user | assistant | tool
	Content string `json:"content"`
	// ToolCalls are the tool calls an assistant message asked for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID names the call a tool message answers (role "tool").
	ToolCallID string `json:"tool_call_id,omitempty"`
	// IsError marks a tool message whose Content reports a failed call
	// (Anthropic's is_error; OpenAI has no such flag and sees the text).
	IsError bool `json:"is_error,omitempty"`
}

// ToolCall is one call of a tool that a model asked for.
type ToolCall struct {
	// ID is the provider's id of the call ("call_…", "toolu_…"); a tool
	// message answers it by this id.
	ID string `json:"id"`
	// Name is the tool's name as offered in ChatRequest.Tools.
	Name string `json:"name"`
	// Arguments is the JSON object the model wrote, as it wrote it.
	Arguments json.RawMessage `json:"arguments"`
}

// ToolSpec describes a tool offered to a model (or listed by a tool plugin).
type ToolSpec struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// InputSchema is the JSON Schema of the arguments (an object schema).
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	// Annotations are hints about the tool's behaviour (MCP's
	// readOnlyHint, idempotentHint, destructiveHint).
	Annotations *ToolAnnotations `json:"annotations,omitempty"`
}

// ToolAnnotations are a tool's own hints about its behaviour, as MCP
// defines them. A nil field is not stated.
type ToolAnnotations struct {
	ReadOnly    *bool `json:"read_only,omitempty"`
	Idempotent  *bool `json:"idempotent,omitempty"`
	Destructive *bool `json:"destructive,omitempty"`
}

// ChatRequest is one provider call.
type ChatRequest struct {
	Messages    []Message `json:"messages"`
	Model       string    `json:"model,omitempty"`
	Temperature *float64  `json:"temperature,omitempty"`
	MaxTokens   int       `json:"max_tokens,omitempty"`
	Stop        []string  `json:"stop,omitempty"`
	JSON        bool      `json:"json,omitempty"` // ask for a JSON object
	// Step is the routine node id the call is made for (scripted providers match on it).
	Step string `json:"step,omitempty"`
	// Config is the provider's block from the pipeline. It is not part of
	// the canonical request hash. For a plugin whose Info.Credentials is
	// set it never holds secrets: an API key is named by
	// Config[ConfigAPIKeyCredential]. Otherwise (api 1 plugins that predate
	// credentials) the key rides in Config[ConfigAPIKey].
	Config map[string]any `json:"config,omitempty"`
	// Vars holds data a scripted provider may match on (input, vars).
	Vars map[string]any `json:"vars,omitempty"`
	// Tools are the tools offered to the model; none when empty.
	Tools []ToolSpec `json:"tools,omitempty"`
	// ToolChoice is "" (the provider's default), "auto", "none",
	// "required", or the name of the one tool the model must call.
	ToolChoice string `json:"tool_choice,omitempty"`
	// ParallelToolCalls, when set, allows or forbids several tool calls in
	// one answer.
	ParallelToolCalls *bool `json:"parallel_tool_calls,omitempty"`
}

// Usage counts tokens.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// ChatResponse is a provider's answer.
type ChatResponse struct {
	Text         string `json:"text"`
	Usage        Usage  `json:"usage"`
	FinishReason string `json:"finish_reason,omitempty"` // stop | length | ...
	Model        string `json:"model,omitempty"`
	// ID is the provider's id for the answer ("chatcmpl-…", "msg_…"),
	// reported as gen_ai.response.id; "" when it sends none.
	ID string `json:"id,omitempty"`
	// ToolCalls are the tools the model asks to call, in its order;
	// FinishReason is then "tool_calls".
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}
