package openai

import (
	"github.com/sextant-dev/sextant/plugins/internal/llmhttp"
	"net/url"
	"strings"

	"github.com/sextant-dev/sextant/sdk"
)

// The Config keys the provider reads. The host fills base_url from the
// provider block and api_key_credential with the name of the variable
// api_key_env names (api_key, the key itself, is still read for hosts that
// send it); the others come from the block's config table.
const (
	ConfigBaseURL = "base_url"
	ConfigAPIKey  = sdk.ConfigAPIKey
	// ConfigAPIKeyCredential names the credential the host fills in as the
	// bearer token (the key itself never reaches the plugin).
	ConfigAPIKeyCredential = sdk.ConfigAPIKeyCredential
	ConfigOrganization     = "organization"
	ConfigProject          = "project"
	ConfigStream           = "stream"
	ConfigMaxTokensParam   = "max_tokens_param"
)

// DefaultBaseURL is OpenAI's own endpoint.
const DefaultBaseURL = "https://api.openai.com/v1"

// The two names a token limit can be sent under.
const (
	paramMaxTokens           = "max_tokens"
	paramMaxCompletionTokens = "max_completion_tokens"
)

// config is one request's Config, checked.
type config struct {
	baseURL      string
	apiKey       string
	credential   string // the host fills it in; see ConfigAPIKeyCredential
	organization string
	project      string
	stream       bool
	tokenParam   string
}

// configFields is the provider's config schema, as Describe reports it.
var configFields = []sdk.ConfigField{
	{Name: "base_url", Type: "string", Default: DefaultBaseURL,
		Doc: "API root of any OpenAI-compatible server (vLLM, Ollama, llama.cpp, LM Studio, LiteLLM); /chat/completions is appended"},
	{Name: "api_key_env", Type: "string",
		Doc: "environment variable holding the API key, sent as a bearer token; leave unset for local servers without one"},
	{Name: ConfigOrganization, Type: "string", Doc: "OpenAI-Organization header"},
	{Name: ConfigProject, Type: "string", Doc: "OpenAI-Project header"},
	{Name: ConfigStream, Type: "bool", Default: false,
		Doc: "ask for server-sent events (with usage) and assemble them into one answer"},
	{Name: ConfigMaxTokensParam, Type: "string", Default: "auto",
		Doc: "field the token limit is sent in: max_tokens, max_completion_tokens, or auto (max_completion_tokens for api.openai.com, max_tokens elsewhere)"},
}

// parseConfig checks c; the first problem is a CodeBadRequest error
// naming the key and the bad value.
func parseConfig(c map[string]any) (*config, error) {
	cfg := &config{baseURL: DefaultBaseURL}
	var err error
	str := func(key string) string {
		v, ok := c[key]
		if !ok || v == nil || err != nil {
			return ""
		}
		s, isStr := v.(string)
		if !isStr {
			err = badConfig(key, v, "a string")
		}
		return s
	}
	if s := str(ConfigBaseURL); s != "" {
		cfg.baseURL = strings.TrimRight(s, "/")
	}
	cfg.apiKey = str(ConfigAPIKey)
	cfg.credential = str(ConfigAPIKeyCredential)
	cfg.organization = str(ConfigOrganization)
	cfg.project = str(ConfigProject)
	param := str(ConfigMaxTokensParam)
	if err != nil {
		return nil, err
	}
	if v, ok := c[ConfigStream]; ok && v != nil {
		b, isBool := v.(bool)
		if !isBool {
			return nil, badConfig(ConfigStream, v, "true or false")
		}
		cfg.stream = b
	}
	u, perr := url.Parse(cfg.baseURL)
	if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, sdk.Errorf(sdk.CodeBadRequest, "%s: config %s %q: want an http or https URL", Name, ConfigBaseURL, llmhttp.RedactURL(cfg.baseURL))
	}
	switch param {
	case "", "auto":
		cfg.tokenParam = paramMaxTokens
		if strings.EqualFold(u.Hostname(), "api.openai.com") {
			cfg.tokenParam = paramMaxCompletionTokens
		}
	case paramMaxTokens, paramMaxCompletionTokens:
		cfg.tokenParam = param
	default:
		return nil, sdk.Errorf(sdk.CodeBadRequest, "%s: config %s %q: want max_tokens, max_completion_tokens or auto", Name, ConfigMaxTokensParam, param)
	}
	return cfg, nil
}

func badConfig(key string, v any, want string) *sdk.Error {
	if key == ConfigAPIKey {
		return sdk.Errorf(sdk.CodeBadRequest, "%s: config %s: want %s, got %T", Name, key, want, v)
	}
	return sdk.Errorf(sdk.CodeBadRequest, "%s: config %s: want %s, got %T %#v", Name, key, want, v, v)
}
