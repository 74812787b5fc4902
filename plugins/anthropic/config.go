package anthropic

import (
	"github.com/sextant-dev/sextant/plugins/internal/llmhttp"
	"net/url"
	"strings"

	"github.com/sextant-dev/sextant/sdk"
)

// The Config keys the provider reads. The host fills base_url from the
// provider block and api_key_credential with the name of the variable
// api_key_env names (api_key, the key itself, is still read for hosts that
// send it); json_prefill comes from the block's config table.
const (
	ConfigBaseURL = "base_url"
	ConfigAPIKey  = sdk.ConfigAPIKey
	// ConfigAPIKeyCredential names the credential the host fills in as
	// x-api-key (the key itself never reaches the plugin).
	ConfigAPIKeyCredential = sdk.ConfigAPIKeyCredential
	ConfigJSONPrefill      = "json_prefill"
)

// DefaultBaseURL is Anthropic's own endpoint; /v1/messages is appended.
const DefaultBaseURL = "https://api.anthropic.com"

// DefaultMaxTokens is sent when the request sets no limit: the Messages
// API requires one.
const DefaultMaxTokens = 1024

// APIVersion is the anthropic-version header the provider speaks.
const APIVersion = "2023-06-01"

// config is one request's Config, checked.
type config struct {
	baseURL    string
	apiKey     string
	credential string // the host fills it in; see ConfigAPIKeyCredential
	prefill    bool
}

// configFields is the provider's config schema, as Describe reports it.
var configFields = []sdk.ConfigField{
	{Name: "base_url", Type: "string", Default: DefaultBaseURL,
		Doc: "API root; /v1/messages is appended (a trailing /v1 is accepted)"},
	{Name: "api_key_env", Type: "string", Required: true,
		Doc: "environment variable holding the API key, sent as x-api-key"},
	{Name: "max_tokens", Type: "number", Default: DefaultMaxTokens,
		Doc: "output token limit, which the Messages API requires"},
	{Name: ConfigJSONPrefill, Type: "bool", Default: true,
		Doc: `in JSON mode, start the answer with "{" (turn off for models that refuse a prefilled answer)`},
}

// parseConfig checks c; the first problem is a CodeBadRequest error
// naming the key and the bad value.
func parseConfig(c map[string]any) (*config, error) {
	cfg := &config{baseURL: DefaultBaseURL, prefill: true}
	if v, ok := c[ConfigBaseURL]; ok && v != nil {
		s, isStr := v.(string)
		if !isStr {
			return nil, sdk.Errorf(sdk.CodeBadRequest, "%s: config %s: want a string, got %T %#v", Name, ConfigBaseURL, v, v)
		}
		if s != "" {
			cfg.baseURL = s
		}
	}
	cfg.baseURL = strings.TrimSuffix(strings.TrimRight(cfg.baseURL, "/"), "/v1")
	u, err := url.Parse(cfg.baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, sdk.Errorf(sdk.CodeBadRequest, "%s: config %s %q: want an http or https URL", Name, ConfigBaseURL, llmhttp.RedactURL(cfg.baseURL))
	}
	if v, ok := c[ConfigAPIKey]; ok && v != nil {
		s, isStr := v.(string)
		if !isStr {
			return nil, sdk.Errorf(sdk.CodeBadRequest, "%s: config %s: want a string, got %T", Name, ConfigAPIKey, v)
		}
		cfg.apiKey = s
	}
	if v, ok := c[ConfigAPIKeyCredential]; ok && v != nil {
		s, isStr := v.(string)
		if !isStr {
			return nil, sdk.Errorf(sdk.CodeBadRequest, "%s: config %s: want a string, got %T %#v", Name, ConfigAPIKeyCredential, v, v)
		}
		cfg.credential = s
	}
	if v, ok := c[ConfigJSONPrefill]; ok && v != nil {
		b, isBool := v.(bool)
		if !isBool {
			return nil, sdk.Errorf(sdk.CodeBadRequest, "%s: config %s: want true or false, got %T %#v", Name, ConfigJSONPrefill, v, v)
		}
		cfg.prefill = b
	}
	return cfg, nil
}
