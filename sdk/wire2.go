package sdk

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
)

//go:generate go run ./internal/wiregen -dir .

// APIBinary is the wire version whose hot methods (navigator.start,
// navigator.next, navigator.boundary, provider.chat, gate.check,
// tool.list, tool.call) are
// encoded in MessagePack instead of JSON. A plugin built with this SDK
// answers both: its Describe answer lists them in Info.APIs, and the host
// then sends those methods as api 2. Every other method, and every plugin
// that does not list 2, stays on api 1 JSON. See PROTOCOL.md, "api 2".
const APIBinary = 2

// methods are the method names an api 2 envelope carries (decoder.method).
var methods = [...]string{MethodChat, MethodCheck, MethodStart, MethodNext, MethodBoundary,
	MethodBoundStart, MethodBoundNext, MethodBoundBoundary, MethodToolList, MethodToolCall}

// hotMethod reports whether method is carried in api 2 when both sides can.
func hotMethod(method string) bool {
	switch method {
	case MethodStart, MethodNext, MethodBoundary, MethodChat, MethodCheck,
		MethodBoundStart, MethodBoundNext, MethodBoundBoundary, MethodToolList, MethodToolCall:
		return true
	}
	return false
}

// codec2 holds the generated api 2 codecs of one method's params and result.
type codec2[Req, Resp any] struct {
	encReq  func(*encoder, *Req)
	decReq  func(*decoder, *Req) error
	encResp func(*encoder, *Resp)
	decResp func(*decoder, *Resp) error
}

var (
	startCodec    = codec2[StartRequest, Decision]{(*encoder).encStartRequest, (*decoder).decStartRequest, (*encoder).encDecision, (*decoder).decDecision}
	nextCodec     = codec2[NextRequest, Decision]{(*encoder).encNextRequest, (*decoder).decNextRequest, (*encoder).encDecision, (*decoder).decDecision}
	boundaryCodec = codec2[BoundaryRequest, Decision]{(*encoder).encBoundaryRequest, (*decoder).decBoundaryRequest, (*encoder).encDecision, (*decoder).decDecision}
	chatCodec     = codec2[ChatRequest, ChatResponse]{(*encoder).encChatRequest, (*decoder).decChatRequest, (*encoder).encChatResponse, (*decoder).decChatResponse}
	checkCodec    = codec2[Comparison, Verdict]{(*encoder).encComparison, (*decoder).decComparison, (*encoder).encVerdict, (*decoder).decVerdict}
	toolListCodec = codec2[ToolListRequest, ToolList]{(*encoder).encToolListRequest, (*decoder).decToolListRequest, (*encoder).encToolList, (*decoder).decToolList}
	toolCallCodec = codec2[ToolCallRequest, ToolResult]{(*encoder).encToolCallRequest, (*decoder).decToolCallRequest, (*encoder).encToolResult, (*decoder).decToolResult}

	boundStartCodec    = codec2[BoundStartRequest, Decision]{(*encoder).encBoundStartRequest, (*decoder).decBoundStartRequest, (*encoder).encDecision, (*decoder).decDecision}
	boundNextCodec     = codec2[BoundNextRequest, Decision]{(*encoder).encBoundNextRequest, (*decoder).decBoundNextRequest, (*encoder).encDecision, (*decoder).decDecision}
	boundBoundaryCodec = codec2[BoundBoundaryRequest, Decision]{(*encoder).encBoundBoundaryRequest, (*decoder).decBoundBoundaryRequest, (*encoder).encDecision, (*decoder).decDecision}
)

// The fixed parts of api 2 envelopes: {"api":2,"method":…,"params":…},
// {"result":…} and {"error":…} as MessagePack maps.
const (
	head2Request = "\x83\xa3api\x02\xa6method"
	key2Params   = "\xa6params"
	head2Result  = "\x81\xa6result"
	head2Error   = "\x81\xa5error"
)

// isMap2 reports whether an envelope starting with c is MessagePack (a
// map); a JSON envelope starts with '{' or white space.
func isMap2(c byte) bool { return c&0xf0 == 0x80 || c == 0xde || c == 0xdf }

// encodeRequest2 encodes an api 2 request envelope.
func encodeRequest2[Req any](method string, params *Req, enc func(*encoder, *Req)) ([]byte, error) {
	return appendRequest2(make([]byte, 0, 512), method, params, enc)
}

// appendRequest2 appends an api 2 request envelope to dst.
func appendRequest2[Req any](dst []byte, method string, params *Req, enc func(*encoder, *Req)) ([]byte, error) {
	e := encoder{b: dst}
	e.b = append(e.b, head2Request...)
	e.str(method)
	e.b = append(e.b, key2Params...)
	enc(&e, params)
	if e.err != nil {
		return nil, fmt.Errorf("encode %s params: %w", method, e.err)
	}
	return e.b, nil
}

// decodeResponse2 decodes an api 2 response envelope into out, or returns
// the *Error it carries.
func decodeResponse2[Resp any](data []byte, out *Resp, dec func(*decoder, *Resp) error) error {
	d := decoder{b: data}
	n, null, err := d.mapHeader()
	if err == nil && (null || n != 1) {
		err = d.errorf("want a map holding result or error")
	}
	if err != nil {
		return fmt.Errorf("malformed response (%s): %w", preview2(data), err)
	}
	key, err := d.key()
	if err != nil {
		return fmt.Errorf("malformed response (%s): %w", preview2(data), err)
	}
	switch string(key) {
	case "result":
		if err := dec(&d, out); err != nil {
			return fmt.Errorf("malformed result (%s): %w", preview2(data), at("result", err))
		}
	case "error":
		e := new(Error)
		if err := d.decError(e); err != nil {
			return fmt.Errorf("malformed error (%s): %w", preview2(data), at("error", err))
		}
		if d.off != len(data) {
			return fmt.Errorf("malformed response (%s): %w", preview2(data), d.errorf("%d bytes after the envelope", len(data)-d.off))
		}
		if e.Code == "" {
			e.Code = CodeInternal
		}
		return e
	default:
		d.off -= len(key)
		return fmt.Errorf("malformed response (%s): %w", preview2(data), d.errorf("want result or error, got %q", key))
	}
	if d.off != len(data) {
		return fmt.Errorf("malformed response (%s): %w", preview2(data), d.errorf("%d bytes after the envelope", len(data)-d.off))
	}
	return nil
}

// preview2 shows the start of a binary message in hex.
func preview2(b []byte) string {
	const max = 24
	if len(b) > max {
		return fmt.Sprintf("% x … %d bytes", b[:max], len(b))
	}
	return fmt.Sprintf("% x", b)
}

// scratch is what one api 2 answer is decoded with and encoded into.
// Handle makes one per call; the wasm guest keeps one for good and reuses
// its buffer, since the host copies each answer out before its next call
// (guest_wasip1.go).
type scratch struct {
	d decoder
	e encoder
	// trusted: the requests come from the host and the answers go to it
	// (the wasm guest's): answers are encoded unchecked (encoder.unchecked).
	trusted bool
	// nav, when set, holds the navigator requests a call decodes into and
	// hands on; the wasm guest keeps one, so a navigator call allocates
	// none of them (a Navigator keeps no request past its call: see
	// Navigator). Nil: each call makes its own.
	nav *navReqs
	// in, when set, is the decoder's interner (the wasm guest keeps one:
	// see interner). Nil: every string is a new copy.
	in *interner
	// pairs and tokens, with nav, are what a bound call's set variables
	// and tokens are decoded into (decoder.pairs, decoder.tokens), reused
	// by the next call: the variables go into the binding's without a map
	// built between, the tokens into the same array.
	pairs  []kv
	tokens []Token

	// pending says dispatch2 left the envelope's last field, params at
	// offset params of req, for call2 to walk (see envelopeEnd).
	req     []byte
	params  int
	pending bool
}

// envelopeEnd makes the envelope checks dispatch2 left pending (params
// well-formed, nothing after it), so that a malformed request reports
// what it would have had params been skipped first. It is nil when
// nothing is pending or all is well.
func (s *scratch) envelopeEnd() error {
	if !s.pending {
		return nil
	}
	s.pending = false
	d := &s.d
	*d = decoder{b: s.req, off: s.params, in: s.in}
	if err := d.skip(); err != nil {
		return Errorf(CodeBadRequest, "malformed request: %v", err)
	}
	if d.off != len(s.req) {
		return Errorf(CodeBadRequest, "malformed request: %v", d.errorf("%d bytes after the envelope", len(s.req)-d.off))
	}
	return nil
}

// navReqs are the navigator requests of one api 2 call.
type navReqs struct {
	start     StartRequest
	next      NextRequest
	boundary  BoundaryRequest
	bstart    BoundStartRequest
	bnext     BoundNextRequest
	bboundary BoundBoundaryRequest
}

// navReq returns field of r, zeroed, or a new T when r is nil.
func navReq[T any](r *navReqs, field func(*navReqs) *T) *T {
	if r == nil {
		return new(T)
	}
	p := field(r)
	var zero T
	*p = zero
	return p
}

// handle2 answers an api 2 request envelope, in s.e's buffer.
func (h *handler) handle2(ctx context.Context, request []byte, s *scratch) []byte {
	s.e = encoder{b: s.e.b[:0], unchecked: s.trusted}
	err := h.dispatch2(ctx, request, s)
	if err == nil {
		return s.e.b
	}
	s.e = encoder{b: s.e.b[:0], unchecked: s.trusted}
	s.e.b = append(s.e.b, head2Error...)
	s.e.encError(AsError(err))
	return s.e.b
}

// dispatch2 decodes the envelope and calls the plugin, which encodes its
// result into s.e; a panic is an internal error. It is dispatch2Body
// under a recover, in a function of one return so that the defer is
// open-coded: a deferred call through the runtime costs ~0.5 µs per call
// in a wasm guest.
func (h *handler) dispatch2(ctx context.Context, request []byte, s *scratch) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = Errorf(CodeInternal, "panicked: %v [%s]", r, firstFrame(string(debug.Stack())))
		}
	}()
	err = h.dispatch2Body(ctx, request, s)
	return err
}

func (h *handler) dispatch2Body(ctx context.Context, request []byte, s *scratch) error {
	d := &s.d
	*d = decoder{b: request, in: s.in}
	n, null, err := d.mapHeader()
	if err == nil && null {
		err = d.errorf("want a map, got nil")
	}
	if err != nil {
		return Errorf(CodeBadRequest, "malformed request: %v", err)
	}
	api, method, params := int64(-1), "", -1
	s.req, s.pending = request, false
	for i := range n {
		key, err := d.key()
		if err != nil {
			return Errorf(CodeBadRequest, "malformed request: %v", err)
		}
		switch string(key) {
		case "api":
			api, err = d.int64()
		case "method":
			method, err = d.method()
		case "params":
			params = d.off
			if i == n-1 {
				// The last field (as every client writes it): call2's
				// decoding walks it once, and envelopeEnd then makes the
				// checks skipping it and the end check below would have.
				s.params, s.pending = params, true
				continue
			}
			err = d.skip()
		default:
			err = d.skip()
		}
		if err != nil {
			return Errorf(CodeBadRequest, "malformed request: %v", err)
		}
	}
	if !s.pending && d.off != len(request) {
		return Errorf(CodeBadRequest, "malformed request: %v", d.errorf("%d bytes after the envelope", len(request)-d.off))
	}
	if api != APIBinary {
		if err := s.envelopeEnd(); err != nil {
			return err
		}
		return Errorf(CodeBadRequest, "api version %d in a MessagePack envelope, plugin speaks %d there", api, APIBinary)
	}
	var pd *decoder
	if params >= 0 {
		*d = decoder{b: request, off: params, in: s.in, noOutput: h.noOutput}
		if s.nav != nil { // kept: the variables a call sets as a list, its tokens in a kept array
			s.pairs = s.pairs[:0]
			d.pairs, d.tokens = &s.pairs, &s.tokens
		}
		pd = d
	}
	switch {
	case h.gate != nil:
		if method == MethodCheck {
			return call2(ctx, s, pd, method, new(Comparison), h.gate.Check, &checkCodec)
		}
	case h.provider != nil:
		if method == MethodChat {
			return call2(ctx, s, pd, method, new(ChatRequest), h.provider.Chat, &chatCodec)
		}
	case h.tool != nil:
		switch method {
		case MethodToolCall:
			return call2(ctx, s, pd, method, new(ToolCallRequest), h.tool.CallTool, &toolCallCodec)
		case MethodToolList:
			return call2(ctx, s, pd, method, new(ToolListRequest), listTools(h.tool), &toolListCodec)
		}
	case h.nav != nil:
		p, r := h.nav, s.nav
		switch method {
		case MethodStart:
			in := navReq(r, func(r *navReqs) *StartRequest { return &r.start })
			return call2(ctx, s, pd, method, in, p.Start, &startCodec)
		case MethodNext:
			in := navReq(r, func(r *navReqs) *NextRequest { return &r.next })
			return call2(ctx, s, pd, method, in, p.Next, &nextCodec)
		case MethodBoundary:
			in := navReq(r, func(r *navReqs) *BoundaryRequest { return &r.boundary })
			return call2(ctx, s, pd, method, in, p.Boundary, &boundaryCodec)
		case MethodBoundStart:
			in := navReq(r, func(r *navReqs) *BoundStartRequest { return &r.bstart })
			out := navReq(r, func(r *navReqs) *StartRequest { return &r.start })
			err := call2(ctx, s, pd, method, in, func(ctx context.Context, b *BoundStartRequest) (*Decision, error) {
				st, err := h.binds.state(&b.State, s.pairs)
				if err != nil {
					return nil, err
				}
				*out = StartRequest{State: st, Trigger: b.Trigger}
				return p.Start(ctx, out)
			}, &boundStartCodec)
			s.recycle(&in.State, nil) // not deferred: a defer costs ~0.3 µs in a wasm guest
			return err
		case MethodBoundNext:
			in := navReq(r, func(r *navReqs) *BoundNextRequest { return &r.bnext })
			out := navReq(r, func(r *navReqs) *NextRequest { return &r.next })
			err := call2(ctx, s, pd, method, in, func(ctx context.Context, b *BoundNextRequest) (*Decision, error) {
				st, err := h.binds.state(&b.State, s.pairs)
				if err != nil {
					return nil, err
				}
				*out = NextRequest{State: st, Token: b.Token, Outcome: b.Outcome}
				return p.Next(ctx, out)
			}, &boundNextCodec)
			s.recycle(&in.State, &in.Outcome) // not deferred: a defer costs ~0.3 µs in a wasm guest
			return err
		case MethodBoundBoundary:
			in := navReq(r, func(r *navReqs) *BoundBoundaryRequest { return &r.bboundary })
			out := navReq(r, func(r *navReqs) *BoundaryRequest { return &r.boundary })
			err := call2(ctx, s, pd, method, in, func(ctx context.Context, b *BoundBoundaryRequest) (*Decision, error) {
				st, err := h.binds.state(&b.State, s.pairs)
				if err != nil {
					return nil, err
				}
				*out = BoundaryRequest{State: st, Token: b.Token, Event: b.Event, Payload: b.Payload}
				return p.Boundary(ctx, out)
			}, &boundBoundaryCodec)
			s.recycle(&in.State, nil) // not deferred: a defer costs ~0.3 µs in a wasm guest
			return err
		}
	}
	if err := s.envelopeEnd(); err != nil {
		return err
	}
	info := h.p.Describe()
	if !hotMethod(method) {
		return Errorf(CodeUnknownMethod, "%s plugin %q does not answer %q in api 2 (send it as api 1 JSON)", info.Kind, info.Name, method)
	}
	return Errorf(CodeUnknownMethod, "%s plugin %q does not answer %q", info.Kind, info.Name, method)
}

// recycle hands the interner the maps of a bound call (its request kept
// in s.nav) that nothing holds once the call is answered: the variables it
// set, which bindings.state copied into the binding's (unless the call
// reset the Env, whose vars then are those very maps), and the outcome's
// output, which the Navigator must not keep (see Navigator). Only with a
// kept scratch and interner (the wasm guest).
func (s *scratch) recycle(st *BoundState, out *Outcome) {
	if s.in == nil || s.nav == nil {
		return
	}
	if st.Base != 0 {
		s.in.recycle(st.Set)
	}
	if out != nil {
		s.in.recycle(out.Output)
	}
}

// call2 decodes the params from d (nil: none) into the zero value in,
// calls fn and appends the result envelope to e.
func call2[Req, Resp any](ctx context.Context, s *scratch, d *decoder, method string, in *Req, fn func(context.Context, *Req) (*Resp, error), c *codec2[Req, Resp]) error {
	e := &s.e
	if d != nil {
		err := c.decReq(d, in)
		if s.pending && (err != nil || d.off != len(s.req)) {
			if err := s.envelopeEnd(); err != nil {
				return err
			}
		}
		if err != nil {
			return Errorf(CodeBadRequest, "%s: malformed params: %v", method, at("params", err))
		}
	}
	out, err := fn(ctx, in)
	if err != nil {
		return err
	}
	if out == nil {
		return Errorf(CodeInternal, "%s returned neither a result nor an error", method)
	}
	e.b = append(e.b, head2Result...)
	c.encResp(e, out)
	if e.err != nil {
		return Errorf(CodeInternal, "encode result: %v", e.err)
	}
	return nil
}

// remote2 calls method in api 2 when the plugin speaks it, else in api 1.
func remote2[Req, Resp any](ctx context.Context, w *wire, method string, req *Req, c *codec2[Req, Resp]) (*Resp, error) {
	if !w.api2 {
		return remote[Req, Resp](ctx, w, method, req)
	}
	out := new(Resp)
	rb := getBuf()
	data, err := appendRequest2(*rb, method, req, c.encReq)
	if err != nil {
		putBuf(rb, data)
		return nil, fmt.Errorf("plugin %q: %w", w.name, err)
	}
	var resp []byte
	if art, ok := w.rt.(appendRoundTripper); ok {
		pb := getBuf()
		defer func() { putBuf(pb, resp) }()
		resp, err = art.RoundTripAppend(ctx, data, *pb)
	} else {
		resp, err = w.rt.RoundTrip(ctx, data)
	}
	putBuf(rb, data) // a RoundTripper keeps no request (see RoundTripper)
	if err != nil {
		return nil, err // transports name the plugin and the fault
	}
	if err := decodeResponse2(resp, out, c.decResp); err != nil {
		return nil, responseError(w.name, method, err)
	}
	return out, nil
}

// appendRoundTripper is a RoundTripper that appends the response to a
// buffer of the caller's (the wasm transport, which copies each answer
// out of the guest's memory): remote2 then reuses that buffer, since the
// decoder copies every string and byte slice out of it.
type appendRoundTripper interface {
	RoundTripAppend(ctx context.Context, request, dst []byte) ([]byte, error)
}

// bufs holds the buffers api 2 requests are encoded into and responses
// copied into; a buffer over maxPooledBuf is left to the GC.
var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

const maxPooledBuf = 64 << 10

func getBuf() *[]byte { b := bufs.Get().(*[]byte); *b = (*b)[:0]; return b }

// putBuf returns b to the pool, keeping used, the slice last built on it.
func putBuf(b *[]byte, used []byte) {
	if used == nil {
		used = *b
	}
	if cap(used) > maxPooledBuf {
		return
	}
	*b = used[:0]
	bufs.Put(b)
}
