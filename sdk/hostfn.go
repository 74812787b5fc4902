package sdk

import "log/slog"

// MaxHTTPBody bounds a response body fetched through HTTP.
const MaxHTTPBody = 32 << 20

// HTTPRequest is an outgoing HTTP request made through the host.
type HTTPRequest struct {
	Method    string              `json:"method"`
	URL       string              `json:"url"`
	Header    map[string][]string `json:"header,omitempty"`
	Body      []byte              `json:"body,omitempty"`
	TimeoutMS int64               `json:"timeout_ms,omitempty"`
	// Credentials lists headers the host fills in with a credential the
	// plugin never sees (see HeaderCredential).
	Credentials []HeaderCredential `json:"credentials,omitempty"`
}

// HeaderCredential asks the host to set one request header to Prefix
// followed by the secret of the credential called Name, for example
// {Header: "Authorization", Name: "OPENAI_API_KEY", Prefix: "Bearer "}.
// A provider gets Name from Config[ConfigAPIKeyCredential].
//
// In a WebAssembly plugin the host function fills the header from the
// credentials the host bound to the plugin when it opened it; the secret
// never enters the sandbox, and occurrences of it in the response are
// masked before the plugin reads it. Natively (a builtin or a process
// plugin) HTTP reads the secret from the environment variable Name, which
// the host puts into a process plugin's environment when it starts it. A
// credential that was not bound fails the request without sending it.
type HeaderCredential struct {
	Header string `json:"header"`
	Name   string `json:"name"`
	Prefix string `json:"prefix,omitempty"`
}

// HTTPResponse is the answer to an HTTPRequest.
type HTTPResponse struct {
	Status int                 `json:"status"`
	Header map[string][]string `json:"header,omitempty"`
	Body   []byte              `json:"body,omitempty"`
	// Error is set (and Status is 0) when the host refused or failed the request.
	Error string `json:"error,omitempty"`
}

// HTTP performs an HTTP request. In a WebAssembly plugin it goes through the
// host's http function, which refuses hosts the pipeline did not grant
// (`[plugins.NAME] allow_http`); natively it uses net/http directly.
func HTTP(req *HTTPRequest) (*HTTPResponse, error) { return doHTTP(req) }

// Log writes a message to the host log under the plugin's name. In a
// WebAssembly plugin it goes through the host's log function; natively it
// goes to slog (the default handler writes to stderr, which the host logs).
func Log(level slog.Level, msg string) { logHost(int32(level), msg) }
