package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/sextant-dev/sextant/sdk"
)

// hostModule is the import module name of the host functions
// (sdk/hostfn_wasip1.go, sdk/PROTOCOL-wasm.md).
const hostModule = "sextant"

// maxLogMessage bounds one message passed to the log host function.
const maxLogMessage = 64 << 10

// instanceKey carries the calling *instance in the context of a call, so
// that host functions, which are shared by every instance of a runtime,
// find the state of the one that called them.
type instanceKey struct{}

func callingInstance(ctx context.Context) *instance {
	inst, _ := ctx.Value(instanceKey{}).(*instance)
	return inst
}

// caller is callingInstance for host functions, which cannot run but on
// behalf of an instance.
func caller(ctx context.Context, fn string) *instance {
	inst := callingInstance(ctx)
	if inst == nil {
		panic(fmt.Errorf("%s.%s: called outside a plugin call", hostModule, fn))
	}
	return inst
}

// instantiateHost defines the "sextant" host module in r. Its functions
// are shared by every instance of the runtime and find the calling one
// through the context.
func instantiateHost(ctx context.Context, r wazero.Runtime) error {
	i32 := api.ValueTypeI32
	_, err := r.NewHostModuleBuilder(hostModule).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostLog), []api.ValueType{i32, i32, i32}, nil).
		WithParameterNames("level", "ptr", "len").
		Export("log").
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostHTTPRequest), []api.ValueType{i32, i32}, []api.ValueType{i32}).
		WithParameterNames("ptr", "len").
		Export("http_request").
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostHTTPResponse), []api.ValueType{i32}, nil).
		WithParameterNames("ptr").
		Export("http_response").
		Instantiate(ctx)
	return err
}

// read copies len bytes at ptr out of the guest's memory. A range outside
// memory is the guest's bug: the panic becomes a trap of this call.
func read(mod api.Module, fn string, ptr, size uint32) []byte {
	b, ok := mod.Memory().Read(ptr, size)
	if !ok {
		panic(fmt.Errorf("%s.%s: %d bytes at %#x are outside memory", hostModule, fn, size, ptr))
	}
	return bytes.Clone(b)
}

// hostLog is log(level i32, ptr i32, len i32): one message at a slog level.
func hostLog(ctx context.Context, mod api.Module, stack []uint64) {
	inst := caller(ctx, "log")
	level, ptr, size := int32(stack[0]), uint32(stack[1]), uint32(stack[2])
	if size > maxLogMessage {
		size = maxLogMessage
	}
	msg := strings.ToValidUTF8(string(read(mod, "log", ptr, size)), "\uFFFD")
	inst.m.log.LogAttrs(inst.parent, slog.Level(level), msg)
}

// hostHTTPRequest is http_request(ptr i32, len i32) -> i32: it performs the
// JSON sdk.HTTPRequest at ptr, keeps the JSON sdk.HTTPResponse as the
// instance's pending response and returns its length. A refused or failed
// request is a response with Error set, never a trap.
func hostHTTPRequest(ctx context.Context, mod api.Module, stack []uint64) {
	inst := caller(ctx, "http_request")
	in := read(mod, "http_request", uint32(stack[0]), uint32(stack[1]))
	// The call's deadline bounds the request: the guest cannot be stopped
	// while the host works for it.
	hctx, cancel := context.WithDeadline(inst.parent, inst.deadlineTime())
	defer cancel()
	resp := inst.m.doHTTP(hctx, in)
	out, err := json.Marshal(resp)
	if err != nil {
		out, _ = json.Marshal(sdk.HTTPResponse{Error: "encode response: " + err.Error()})
	}
	inst.pendingHTTP = out
	stack[0] = uint64(len(out))
}

// hostHTTPResponse is http_response(ptr i32): it copies the pending
// response into the guest's buffer at ptr, which must hold the length
// http_request returned, and forgets it.
func hostHTTPResponse(ctx context.Context, mod api.Module, stack []uint64) {
	inst := caller(ctx, "http_response")
	if inst.pendingHTTP == nil {
		return
	}
	ptr := uint32(stack[0])
	if !mod.Memory().Write(ptr, inst.pendingHTTP) {
		panic(fmt.Errorf("%s.http_response: %d bytes at %#x are outside memory", hostModule, len(inst.pendingHTTP), ptr))
	}
	inst.pendingHTTP = nil
}

// doHTTP performs one guest request, if the pipeline granted its host.
func (m *Module) doHTTP(ctx context.Context, in []byte) sdk.HTTPResponse {
	var req sdk.HTTPRequest
	if err := json.Unmarshal(in, &req); err != nil {
		return sdk.HTTPResponse{Error: "malformed request: " + err.Error()}
	}
	u, err := url.Parse(req.URL)
	if err != nil {
		return sdk.HTTPResponse{Error: err.Error()}
	}
	if err := m.granted(u); err != nil {
		return sdk.HTTPResponse{Error: err.Error()}
	}
	if req.Method == "" {
		req.Method = http.MethodGet
	}
	if req.TimeoutMS > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMS)*time.Millisecond)
		defer cancel()
	}
	hr, err := http.NewRequestWithContext(ctx, req.Method, u.String(), bytes.NewReader(req.Body))
	if err != nil {
		return sdk.HTTPResponse{Error: err.Error()}
	}
	for k, vs := range req.Header {
		for _, v := range vs {
			hr.Header.Add(k, v)
		}
	}
	var secrets []string
	for _, c := range req.Credentials {
		secret, ok := m.cfg.Credentials[c.Name]
		if !ok {
			return sdk.HTTPResponse{Error: fmt.Sprintf("credential %q is not bound to plugin %q (the pipeline binds a provider's api_key_env)", c.Name, m.cfg.Name)}
		}
		if c.Header == "" || !validHeaderName(c.Header) {
			return sdk.HTTPResponse{Error: fmt.Sprintf("credential %q: invalid header name %q", c.Name, c.Header)}
		}
		hr.Header.Set(c.Header, c.Prefix+secret)
		secrets = append(secrets, secret)
	}
	if len(secrets) > 0 {
		hr = hr.WithContext(context.WithValue(hr.Context(), credentialKey{}, u.Host))
	}
	resp, err := m.http.Do(hr)
	if err != nil {
		return sdk.HTTPResponse{Error: mask(err.Error(), secrets)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, sdk.MaxHTTPBody+1))
	if err != nil {
		return sdk.HTTPResponse{Error: mask("read body: "+err.Error(), secrets)}
	}
	if len(body) > sdk.MaxHTTPBody {
		return sdk.HTTPResponse{Error: fmt.Sprintf("response body exceeds the %s limit", sizeString(sdk.MaxHTTPBody))}
	}
	header := resp.Header
	if len(secrets) > 0 {
		// An upstream that echoes the key (in an error, a debug header)
		// must not hand it to the guest.
		body = maskBytes(body, secrets)
		header = make(http.Header, len(resp.Header))
		for k, vs := range resp.Header {
			for _, v := range vs {
				header[k] = append(header[k], mask(v, secrets))
			}
		}
	}
	return sdk.HTTPResponse{Status: resp.StatusCode, Header: header, Body: body}
}

// credentialKey marks the context of a request that carries a bound
// credential with the host it was meant for.
type credentialKey struct{}

// masked replaces a bound credential in what the guest reads.
const masked = "[credential]"

func mask(s string, secrets []string) string {
	for _, sec := range secrets {
		s = strings.ReplaceAll(s, sec, masked)
	}
	return s
}

func maskBytes(b []byte, secrets []string) []byte {
	for _, sec := range secrets {
		if bytes.Contains(b, []byte(sec)) {
			b = bytes.ReplaceAll(b, []byte(sec), []byte(masked))
		}
	}
	return b
}

// validHeaderName reports whether s is an HTTP header field name (RFC 9110
// token).
func validHeaderName(s string) bool {
	for _, r := range s {
		if r > 0x7e || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return s != ""
}

// granted checks u's scheme and host:port against the pipeline's grant.
func (m *Module) granted(u *url.URL) error {
	var port string
	switch u.Scheme {
	case "https":
		port = "443"
	case "http":
		port = "80"
	default:
		return fmt.Errorf("scheme %q not supported (want http or https)", u.Scheme)
	}
	if p := u.Port(); p != "" {
		port = p
	}
	hp := net.JoinHostPort(strings.ToLower(u.Hostname()), port)
	if !slices.Contains(m.cfg.AllowHTTP, hp) {
		return fmt.Errorf("host %q not granted to plugin %q (grant it with [plugins.%s] allow_http)", hp, m.cfg.Name, m.cfg.Name)
	}
	return nil
}

// newHTTPClient returns the client of the http host function. Redirects
// are checked against the grant like the first request, or a granted host
// could bounce the plugin anywhere.
func (m *Module) newHTTPClient() *http.Client {
	return &http.Client{
		Transport: http.DefaultTransport.(*http.Transport).Clone(),
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			// A bound credential goes to the host the plugin named, not to
			// wherever that host redirects (Go forwards custom headers).
			if host, ok := req.Context().Value(credentialKey{}).(string); ok && !strings.EqualFold(req.URL.Host, host) {
				return fmt.Errorf("redirect from %s to %s refused: the request carries a bound credential", host, req.URL.Host)
			}
			return m.granted(req.URL)
		},
	}
}
