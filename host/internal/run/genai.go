package run

import (
	"errors"
	"net"
	"net/url"
	"strconv"

	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// SetCallAttributes sets c to the OpenTelemetry GenAI attributes of a
// call through the block called block: gen_ai.provider.name is the
// well-known provider behind it (Provider.System, "openai"), not the
// block's name (sextant.provider); server.address and server.port say
// where it went; gen_ai.output.type is json or text. resp is nil for a
// failed call. What the caller adds (the sextant.* attributes) it sets
// in c after.
func (r *Providers) SetCallAttributes(c *store.CallAttributes, block string, req *sdk.ChatRequest, resp *sdk.ChatResponse) {
	p, _ := r.Get(block)
	system := ""
	if p != nil {
		system = p.System
		if system == "" && p.Plugin != nil {
			system = r.pluginName(p)
		}
	}
	*c = store.CallAttributes{Block: block}
	c.SetChat(system, req, resp)
	if req != nil {
		c.OutputType = "text"
		if req.JSON {
			c.OutputType = "json"
		}
	}
	if p != nil {
		c.Server, c.Port, c.HasServer = serverOf(p.BaseURL)
	}
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
