package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
)

// The wire methods. The params and result of each are the JSON encodings
// of the Go types named beside it. See PROTOCOL.md.
const (
	MethodDescribe = "describe"           // {} → Info
	MethodCheck    = "gate.check"         // Comparison → Verdict
	MethodChat     = "provider.chat"      // ChatRequest → ChatResponse
	MethodEmbed    = "provider.embed"     // EmbedRequest → EmbedResponse, for plugins whose Info has Embed
	MethodLoad     = "navigator.load"     // LoadRequest → Routine
	MethodStart    = "navigator.start"    // StartRequest → Decision
	MethodNext     = "navigator.next"     // NextRequest → Decision
	MethodBoundary = "navigator.boundary" // BoundaryRequest → Decision
	MethodIO       = "navigator.io"       // IORequest → NodeIO
	MethodToolList = "tool.list"          // ToolListRequest → ToolList
	MethodToolCall = "tool.call"          // ToolCallRequest → ToolResult

	// The bind-once methods, for plugins whose Info has Bind.
	MethodBind          = "navigator.bind"           // BindRequest → Bound
	MethodBoundStart    = "navigator.bound.start"    // BoundStartRequest → Decision
	MethodBoundNext     = "navigator.bound.next"     // BoundNextRequest → Decision
	MethodBoundBoundary = "navigator.bound.boundary" // BoundBoundaryRequest → Decision
)

// Request is the envelope of one call on a wire transport.
type Request struct {
	API    int             `json:"api"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// Response is the envelope of one answer: exactly one of Result and Error.
type Response struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
}

// EncodeRequest encodes a call envelope for method with params. The keys
// are always written in the order api, method, params, with no spaces (see
// PROTOCOL.md), which lets a plugin dispatch on the prefix and lets Serve
// slice out the params without scanning them twice.
func EncodeRequest(method string, params any) ([]byte, error) {
	m, err := json.Marshal(method)
	if err != nil {
		return nil, fmt.Errorf("encode method: %w", err)
	}
	b := make([]byte, 0, 64)
	b = append(b, `{"api":`...)
	b = strconv.AppendInt(b, APIVersion, 10)
	b = append(b, `,"method":`...)
	b = append(b, m...)
	if params != nil {
		p, err := json.Marshal(params)
		if err != nil {
			return nil, fmt.Errorf("encode %s params: %w", method, err)
		}
		b = append(b, `,"params":`...)
		b = append(b, p...)
	}
	return append(b, '}'), nil
}

// splitRequest reads the envelope EncodeRequest writes without scanning the
// params; ok is false for any other shape, which callers then decode in full.
func splitRequest(data []byte) (req Request, ok bool) {
	const head = `{"api":`
	if !bytes.HasPrefix(data, []byte(head)) || len(data) < len(head)+2 || data[len(data)-1] != '}' {
		return req, false
	}
	rest := data[len(head):]
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	api, err := strconv.Atoi(string(rest[:i]))
	if err != nil {
		return req, false
	}
	rest = rest[i:]
	const mk = `,"method":"`
	if !bytes.HasPrefix(rest, []byte(mk)) {
		return req, false
	}
	rest = rest[len(mk):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return req, false
	}
	req.API, req.Method = api, string(rest[:end])
	rest = rest[end+1:]
	switch {
	case len(rest) == 1: // just the closing brace
		return req, true
	case bytes.HasPrefix(rest, []byte(`,"params":`)):
		req.Params = rest[len(`,"params":`) : len(rest)-1]
		return req, true
	}
	return req, false
}

// DecodeResponse decodes a response envelope into result (a pointer), or
// returns the *Error it carries.
func DecodeResponse(data []byte, result any) error {
	const head = `{"result":`
	if bytes.HasPrefix(data, []byte(head)) && len(data) > len(head)+1 && data[len(data)-1] == '}' {
		// The shape Serve writes: decode the result in place, one pass.
		if err := json.Unmarshal(data[len(head):len(data)-1], result); err == nil {
			return nil
		}
	}
	var resp Response
	if err := json.Unmarshal(data, &resp); err != nil {
		return fmt.Errorf("malformed response (%s): %w", preview(data), err)
	}
	if resp.Error != nil {
		if resp.Error.Code == "" {
			resp.Error.Code = CodeInternal
		}
		return resp.Error
	}
	if resp.Result == nil {
		return fmt.Errorf("malformed response: neither result nor error (%s)", preview(data))
	}
	if err := json.Unmarshal(resp.Result, result); err != nil {
		return fmt.Errorf("malformed result (%s): %w", preview(resp.Result), err)
	}
	return nil
}

func preview(b []byte) string {
	const max = 80
	s := strings.ToValidUTF8(string(b), "?")
	if len(s) > max {
		return fmt.Sprintf("%q… %d bytes", s[:max], len(b))
	}
	return fmt.Sprintf("%q", s)
}

// Serve returns the Handler that answers wire requests for p. Every wire
// transport (wasm, process) and sdktest.Wire go through it, so a plugin
// behaves the same over all of them. A panic in the plugin becomes a
// CodeInternal error that names it.
//
// For a Navigator, Serve also answers the bind-once methods: it keeps the
// bindings (at most maxBindings, the oldest evicted) and rebuilds each
// call's whole State from the binding and the changes the call carries,
// so the Navigator sees exactly the State a whole request would have
// carried. Its Describe answer then has Bind set.
func Serve(p Plugin) Handler {
	h := &handler{p: p}
	switch p := p.(type) { // the order dispatch picks a role in
	case Gate:
		h.gate = p
	case Provider:
		h.provider = p
		h.embed, _ = p.(Embedder)
	case Navigator:
		h.nav = p
	case Tool:
		h.tool = p
	}
	if _, ok := p.(Navigator); ok {
		h.binds = &bindings{m: map[string]*binding{}}
		ob, ok := p.(OutputBlind)
		h.noOutput = ok && ob.OutputBlind()
	}
	return h
}

type handler struct {
	p     Plugin
	binds *bindings // nil unless p is a Navigator
	// gate, provider, nav and tool hold p in the role api 2 calls it in (one
	// of them), found once rather than by a type switch per call.
	gate     Gate
	provider Provider
	nav      Navigator
	tool     Tool
	// embed is provider as an Embedder, when it is one: it answers
	// provider.embed and its Describe answer has Embed set.
	embed Embedder
	// noOutput: the Navigator never reads Outcome.Output (OutputBlind),
	// so api 2 requests pass over it instead of decoding it.
	noOutput bool
}

func (h *handler) Handle(ctx context.Context, request []byte) []byte {
	if len(request) > 0 && isMap2(request[0]) {
		return h.handle2(ctx, request, &scratch{e: encoder{b: make([]byte, 0, 512)}})
	}
	result, err := h.dispatch(ctx, request)
	if err == nil {
		b, merr := json.Marshal(result)
		if merr == nil {
			// Written by hand: marshalling a RawMessage inside the envelope
			// would scan the result again (in a wasm guest, scans dominate).
			out := make([]byte, 0, len(b)+len(`{"result":}`))
			out = append(out, `{"result":`...)
			out = append(out, b...)
			return append(out, '}')
		}
		err = Errorf(CodeInternal, "encode result: %v", merr)
	}
	out, merr := json.Marshal(Response{Error: AsError(err)})
	if merr != nil {
		out, _ = json.Marshal(Response{Error: Errorf(CodeInternal, "encode response: %v", merr)})
	}
	return out
}

func (h *handler) dispatch(ctx context.Context, request []byte) (result any, err error) {
	defer func() {
		if r := recover(); r != nil {
			stack := string(debug.Stack())
			err = Errorf(CodeInternal, "panicked: %v [%s]", r, firstFrame(stack))
		}
	}()
	req, ok := splitRequest(request)
	if !ok {
		if err := json.Unmarshal(request, &req); err != nil {
			return nil, Errorf(CodeBadRequest, "malformed request: %v", err)
		}
	}
	if req.API != APIVersion {
		return nil, Errorf(CodeBadRequest, "api version %d, plugin speaks %d", req.API, APIVersion)
	}
	if req.Method == MethodDescribe {
		info := h.p.Describe()
		info.Bind = info.Bind || h.binds != nil
		info.OutputBlind = info.OutputBlind || h.noOutput
		info.Embed = h.embed != nil              // what Serve answers, whatever Describe said
		info.APIs = []int{APIVersion, APIBinary} // Handle answers both
		return info, nil
	}
	switch p := h.p.(type) {
	case Gate:
		if req.Method == MethodCheck {
			return call(ctx, req, p.Check)
		}
	case Provider:
		switch {
		case req.Method == MethodChat:
			return call(ctx, req, p.Chat)
		case req.Method == MethodEmbed && h.embed != nil:
			return call(ctx, req, h.embed.Embed)
		}
	case Navigator:
		switch req.Method {
		case MethodLoad:
			return call(ctx, req, p.Load)
		case MethodStart:
			return call(ctx, req, p.Start)
		case MethodNext:
			return call(ctx, req, p.Next)
		case MethodBoundary:
			return call(ctx, req, p.Boundary)
		case MethodIO:
			return call(ctx, req, p.IO)
		case MethodBind:
			return call(ctx, req, h.binds.bind)
		case MethodBoundStart:
			return call(ctx, req, h.boundStart(p))
		case MethodBoundNext:
			return call(ctx, req, h.boundNext(p))
		case MethodBoundBoundary:
			return call(ctx, req, h.boundBoundary(p))
		}
	case Tool:
		switch req.Method {
		case MethodToolList:
			return call(ctx, req, listTools(p))
		case MethodToolCall:
			return call(ctx, req, p.CallTool)
		}
	}
	return nil, Errorf(CodeUnknownMethod, "%s plugin %q does not answer %q", h.p.Describe().Kind, h.p.Describe().Name, req.Method)
}

func call[Req, Resp any](ctx context.Context, req Request, fn func(context.Context, *Req) (*Resp, error)) (any, error) {
	in := new(Req)
	if len(req.Params) > 0 {
		if err := json.Unmarshal(req.Params, in); err != nil {
			return nil, Errorf(CodeBadRequest, "%s: malformed params: %v", req.Method, err)
		}
	}
	out, err := fn(ctx, in)
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, Errorf(CodeInternal, "%s returned neither a result nor an error", req.Method)
	}
	return out, nil
}

// firstFrame picks the panicking function out of a stack trace.
func firstFrame(stack string) string {
	lines := strings.Split(stack, "\n")
	for i := 0; i+1 < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if strings.HasPrefix(l, "panic(") {
			if i+3 < len(lines) {
				return strings.TrimSpace(lines[i+2]) + " " + strings.TrimSpace(lines[i+3])
			}
		}
	}
	return "no frame"
}

// EnvelopeMethod reads the method name out of a request envelope of
// either wire version, for transports' messages; "" if there is none.
func EnvelopeMethod(request []byte) string {
	if len(request) > 0 && isMap2(request[0]) {
		d := decoder{b: request}
		n, null, err := d.mapHeader()
		if err != nil || null {
			return ""
		}
		for range n {
			key, err := d.key()
			if err != nil {
				return ""
			}
			if string(key) == "method" {
				m, _ := d.str()
				return m
			}
			if d.skip() != nil {
				return ""
			}
		}
		return ""
	}
	if req, ok := splitRequest(request); ok {
		return req.Method
	}
	var env struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(request, &env) != nil {
		return ""
	}
	return env.Method
}

// boundStart answers navigator.bound.start: the whole State is rebuilt
// from the binding and the call's changes, then p.Start sees it as a whole
// request would have carried it. boundNext and boundBoundary are the same
// for Next and Boundary. Both wire versions dispatch through them.
func (h *handler) boundStart(p Navigator) func(context.Context, *BoundStartRequest) (*Decision, error) {
	return func(ctx context.Context, r *BoundStartRequest) (*Decision, error) {
		st, err := h.binds.state(&r.State, nil)
		if err != nil {
			return nil, err
		}
		return p.Start(ctx, &StartRequest{State: st, Trigger: r.Trigger})
	}
}

func (h *handler) boundNext(p Navigator) func(context.Context, *BoundNextRequest) (*Decision, error) {
	return func(ctx context.Context, r *BoundNextRequest) (*Decision, error) {
		st, err := h.binds.state(&r.State, nil)
		if err != nil {
			return nil, err
		}
		return p.Next(ctx, &NextRequest{State: st, Token: r.Token, Outcome: r.Outcome})
	}
}

func (h *handler) boundBoundary(p Navigator) func(context.Context, *BoundBoundaryRequest) (*Decision, error) {
	return func(ctx context.Context, r *BoundBoundaryRequest) (*Decision, error) {
		st, err := h.binds.state(&r.State, nil)
		if err != nil {
			return nil, err
		}
		return p.Boundary(ctx, &BoundaryRequest{State: st, Token: r.Token, Event: r.Event, Payload: r.Payload})
	}
}

// listTools adapts Tool.ListTools to the tool.list method: its result is
// wrapped in a ToolList, and a nil list is an empty one.
func listTools(p Tool) func(context.Context, *ToolListRequest) (*ToolList, error) {
	return func(ctx context.Context, _ *ToolListRequest) (*ToolList, error) {
		specs, err := p.ListTools(ctx)
		if err != nil {
			return nil, err
		}
		if specs == nil {
			specs = []ToolSpec{}
		}
		return &ToolList{Tools: specs}, nil
	}
}
