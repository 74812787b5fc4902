package run

import (
	"errors"
	"net"
	"net/url"
	"strconv"

	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// CallAttributes returns the OpenTelemetry GenAI attributes of a call
// through the block called block: gen_ai.provider.name is the well-known
// provider behind it (Provider.System, "openai"), not the block's name
// (sextant.provider); server.address and server.port say where it went;
// gen_ai.output.type is json or text. resp is nil for a failed call. The
// map has room for room more attributes, the caller's.
func (r *Providers) CallAttributes(block string, req *sdk.ChatRequest, resp *sdk.ChatResponse, room int) store.Attributes {
	p, _ := r.Get(block)
	system := ""
	if p != nil {
		system = p.System
		if system == "" && p.Plugin != nil {
			system = r.pluginName(p)
		}
	}
	var server string
	var port int
	var hasServer bool
	if p != nil {
		server, port, hasServer = serverOf(p.BaseURL)
	}
	own := 0 // what this adds: the block, the output type, the server
	if block != "" {
		own++
	}
	if req != nil {
		own++
	}
	if hasServer {
		own += 2
	}
	a := store.ChatSpanAttributesRoom(system, req, resp, own+room)
	if block != "" {
		a[store.AttrSextantProvider] = store.String(block)
	}
	if req != nil {
		out := "text"
		if req.JSON {
			out = "json"
		}
		a[store.AttrGenAIOutputType] = store.String(out)
	}
	if hasServer {
		a[store.AttrServerAddress] = store.String(server)
		a[store.AttrServerPort] = store.Int(int64(port))
	}
	return a
}

// serverOf is the host and port of a base URL (the scheme's port when
// it names none).
func serverOf(base string) (string, int, bool) {
	if base == "" {
		return "", 0, false
	}
	u, err := url.Parse(base)
	if err != nil || u.Hostname() == "" {
		return "", 0, false
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil {
			return "", 0, false
		}
		return u.Hostname(), n, true
	}
	switch u.Scheme {
	case "https":
		return u.Hostname(), 443, true
	case "http":
		return u.Hostname(), 80, true
	}
	_, _, err = net.SplitHostPort(u.Host)
	return u.Hostname(), 0, err == nil
}

// ErrorType is the error.type attribute of a failed call: the sdk error
// code (rate_limited, timeout, auth, …), circuit_open, or _OTHER.
func ErrorType(err error) string {
	var se *sdk.Error
	switch {
	case errors.Is(err, ErrCircuitOpen):
		return "circuit_open"
	case errors.As(err, &se):
		return string(se.Code)
	case errors.Is(err, ErrUsage):
		return "impossible_usage"
	}
	return "_OTHER"
}
