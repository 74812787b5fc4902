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
