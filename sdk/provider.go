package sdk

import "context"

// Provider answers chat requests: an LLM behind an API, or a scripted stand-in.
type Provider interface {
	Plugin
	// Chat sends one request. Failures should be *Error values with a
	// Code (rate limited, timeout, auth, bad request, unavailable) so the
	// host can retry or fall back.
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

// Message is one chat message.
type Message struct {
	Role    string `json:"role"` // system | user | assistant
	Content string `json:"content"`
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
}
