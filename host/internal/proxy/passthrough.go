package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
	sseread "github.com/sextant-dev/sextant/sdk/sse"
)

// MaxResponse is the largest upstream answer the proxy passes on and
// records.
const MaxResponse = 32 << 20

// maxErrorBody is how much of an upstream's error answer is read.
const maxErrorBody = 1 << 20

// route is one of the proxy's endpoints.
type route struct {
	path string
	api  string // "openai" | "anthropic": the upstream's API and the error shape
	op   string // gen_ai.operation.name
	// upstream is appended to the block's base_url (an openai block's
	// base_url ends in /v1, an anthropic block's does not).
	upstream string
}

var (
	routeChat       = &route{path: RouteChatCompletions, api: "openai", op: "chat", upstream: "/chat/completions"}
	routeResponses  = &route{path: RouteResponses, api: "openai", op: "chat", upstream: "/responses"}
	routeEmbeddings = &route{path: RouteEmbeddings, api: "openai", op: "embeddings", upstream: "/embeddings"}
	routeMessages   = &route{path: RouteMessages, api: "anthropic", op: "chat", upstream: "/v1/messages"}
	routes          = []*route{routeChat, routeResponses, routeEmbeddings, routeMessages}
)

// writeError writes f in the route's API's error shape.
func (rt *route) writeError(w http.ResponseWriter, f *failure) {
	if rt.api == "anthropic" {
		writeAnthropicError(w, f)
		return
	}
	writeOpenAIError(w, f)
}

// routeHandler serves one route.
type routeHandler struct {
	p  *Proxy
	rt *route
}

func (h routeHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.p.serveRoute(w, r, h.rt) }

// WriteUnauthorized writes a 401 as the route's API does for a wrong API
// key, so an agent's SDK reports a missing or wrong token as it reports
// a wrong key.
func (h routeHandler) WriteUnauthorized(w http.ResponseWriter, _ *http.Request, msg string) {
	h.rt.writeError(w, &failure{status: http.StatusUnauthorized, class: "auth", code: "invalid_api_key", msg: msg})
}

// Upstream is a provider block the proxy forwards requests to as they
// are: a block whose use is "openai" (chat completions, responses,
// embeddings) or "anthropic" (messages).
type Upstream struct {
	// API is "openai" or "anthropic".
	API string
	// BaseURL is the block's base_url, else the provider's default.
	BaseURL string
	// Key is the API key (the block's api_key_env), sent as the
	// upstream's own auth header; "" sends none.
	Key string
	// Model replaces the client's model when set.
	Model string
	// Timeout bounds the wait for the answer to start and each wait for
	// more of it; 0 means 60s.
	Timeout time.Duration
	// Retries are the attempts after the first, before any byte reached
	// the client, on a connection error, 429 or 5xx.
	Retries int
	// Fallback names the blocks tried next, in order (those of the same
	// API).
	Fallback []string
}

// NewUpstreams returns the HTTP upstreams among p's provider blocks
// (p is a server configuration; ps its opened providers, for the base
// URLs the providers default to), their keys read from the environment,
// and every key any block names (what the proxy scrubs from answers).
func NewUpstreams(p *pipeline.Pipeline, ps *run.Providers) (map[string]Upstream, []string) {
	ups := map[string]Upstream{}
	var secrets []string
	for name, spec := range p.Providers {
		key := ""
		if spec.APIKeyEnv != "" {
			key = os.Getenv(spec.APIKeyEnv)
			secrets = append(secrets, key)
		}
		if spec.Use != "openai" && spec.Use != "anthropic" {
			continue
		}
		base := spec.BaseURL
		if ps != nil {
			if pr, ok := ps.Get(name); ok && pr.BaseURL != "" {
				base = pr.BaseURL
			}
		}
		if base == "" {
			continue
		}
		ups[name] = Upstream{API: spec.Use, BaseURL: strings.TrimRight(base, "/"), Key: key, Model: spec.Model,
			Timeout: spec.Timeout.Std(), Retries: spec.Retries, Fallback: spec.Fallback}
	}
	return ups, secrets
}

// block is the provider block answering a request for model on a route
// of api: the block named like the model, else the block named like the
// API ("openai", "anthropic"), else "default"; "" when none exists.
func (p *Proxy) block(model, api string) string {
	for _, name := range []string{model, api, "default"} {
		if name == "" {
			continue
		}
		if _, ok := p.cfg.Upstreams[name]; ok {
			return name
		}
		if p.cfg.Providers != nil {
			if _, ok := p.cfg.Providers.Get(name); ok {
				return name
			}
		}
	}
	return ""
}

// serveRoute serves a route: replayed, forwarded as it is to an HTTP
// upstream of the route's API, or translated for a block that is not one.
func (p *Proxy) serveRoute(w http.ResponseWriter, r *http.Request, rt *route) {
	if f := checkRaw(r); f != nil {
		rt.writeError(w, f)
		return
	}
	body, held, f := p.budget.read(w, r)
	if f != nil {
		p.budget.Give(held)
		rt.writeError(w, f)
		return
	}
	// The buffer's spare capacity stays held until the call ends.
	cost, f := decodeCost(body)
	if f != nil {
		p.budget.Give(held)
		rt.writeError(w, f)
		return
	}
	cost += int64(cap(body) - len(body))
	if !p.budget.Grow(held, cost) {
		p.budget.Give(held)
		rt.writeError(w, busyFailure())
		return
	}
	defer p.budget.Give(cost)
	c, f := parseRaw(rt, r, body)
	if f != nil {
		rt.writeError(w, f)
		return
	}
	if c.replay || p.cfg.Replay {
		p.replayRaw(w, r, c)
		return
	}
	block := p.block(c.model, rt.api)
	if up, ok := p.cfg.Upstreams[block]; ok && up.API == rt.api {
		p.forward(w, r, c, block)
		return
	}
	switch {
	case block != "" && rt == routeChat:
		p.serveOpenAI(w, r, body, block)
	case block != "" && rt == routeMessages:
		p.serveAnthropic(w, r, body, block)
	case block == "" && p.cfg.Providers == nil && len(p.cfg.Upstreams) == 0:
		rt.writeError(w, &failure{status: http.StatusNotFound, class: "not_found", code: "model_not_found",
			msg: "the proxy has no providers (start it with a server config declaring [providers.default], or in replay mode)"})
	case block == "":
		rt.writeError(w, &failure{status: http.StatusNotFound, class: "not_found", code: "model_not_found", param: "model",
			msg: fmt.Sprintf("model %q: no [providers.%s] block, no [providers.%s] and no [providers.default] in the server config", c.model, c.model, rt.api)})
	default:
		rt.writeError(w, badRequest("unsupported_provider", "model",
			"%s: provider block %q is not an HTTP upstream of the %s API: only a block with use = %q passes %s through",
			rt.path, block, rt.api, rt.api, rt.path))
	}
}

// recorded is what a pass-through recording holds as its response: the
// answer's bytes as the client received them.
type recorded struct {
	Status      int    `json:"status"`
	ContentType string `json:"content_type,omitempty"`
	Stream      bool   `json:"stream,omitempty"`
	// Body is the answer; BodyBase64 holds it instead when it is not
	// UTF-8 (a JSON string could not carry it byte for byte).
	Body       string `json:"body"`
	BodyBase64 []byte `json:"body_base64,omitempty"`
	// Text is the answer's text, for people reading the store.
	Text string `json:"text,omitempty"`
}

func (r *recorded) bytes() []byte {
	if r.BodyBase64 != nil {
		return r.BodyBase64
	}
	return []byte(r.Body)
}

func newRecorded(ct string, stream bool, body []byte, text string) *recorded {
	r := &recorded{Status: http.StatusOK, ContentType: ct, Stream: stream, Text: text}
	if utf8.Valid(body) {
		r.Body = string(body)
	} else {
		r.BodyBase64 = body
	}
	return r
}

// rawRecord is one pass-through call being recorded.
type rawRecord struct {
	p     *Proxy
	c     *rawCall
	task  string
	block string
	start time.Time
	mode  string // live | replay
}

func (p *Proxy) newRawRecord(c *rawCall, mode string) *rawRecord {
	rc := &rawRecord{p: p, c: c, start: p.cfg.Store.Now(), mode: mode}
	if c.group != "" {
		rc.task = groupTask(c.group)
	} else if mode == "live" {
		rc.task = p.cfg.Store.NewID()
	}
	return rc
}

func (rc *rawRecord) attrs() store.Attributes {
	a := requestAttrs(rc.c.rt, rc.c.fields)
	a["sextant.request_hash"] = store.String(rc.c.hash)
	a["sextant.proxy.api"] = store.String(rc.c.rt.path)
	a["sextant.proxy.stream"] = store.Bool(rc.c.stream)
	if rc.block != "" {
		a["sextant.provider"] = store.String(rc.block)
	}
	return a
}

func (rc *rawRecord) spanName() string {
	if rc.c.model == "" {
		return rc.c.rt.op
	}
	return rc.c.rt.op + " " + rc.c.model
}

func (rc *rawRecord) newCall(status store.Status, end time.Time) *store.Call {
	tstatus := store.StatusCompleted
	if rc.c.group == "" {
		tstatus = status // a task of its own (an existing task keeps its status)
	}
	if rc.task == "" {
		rc.task = rc.p.cfg.Store.NewID()
	}
	input, _ := json.Marshal(map[string]string{"api": rc.c.rt.api, "route": rc.c.rt.path, "group": rc.c.group})
	return &store.Call{
		Task: &store.Task{ID: rc.task, Pipeline: rc.p.cfg.Name, Status: tstatus, Input: input, Tags: []string{"proxy"}},
		Execution: &store.Execution{Mode: rc.mode, Status: status, Started: rc.start, Ended: end,
			Trace: []string{"call " + rc.c.hash[:12]}},
	}
}

// stores reports whether this call is written: every live call, a
// replayed one only with Config.RecordReplays.
func (rc *rawRecord) stores() bool { return rc.mode == "live" || rc.p.cfg.RecordReplays }

func (rc *rawRecord) write(ctx context.Context, c *store.Call) error {
	ctx = context.WithoutCancel(ctx) // a client that hung up is still recorded
	if err := rc.p.cfg.Store.RecordCall(ctx, c); err != nil {
		rc.p.log.Error("record call", "task", c.Task.ID, "err", rc.p.scrub.string(err.Error()))
		return err
	}
	if rc.p.cfg.OnSpans != nil {
		rc.p.cfg.OnSpans(c.Spans)
	}
	return nil
}

// failed records a call that was not answered (errType is error.type);
// f.task names the task when it was recorded.
func (rc *rawRecord) failed(ctx context.Context, f *failure, errType string, broken bool) *failure {
	f.msg = rc.p.scrub.string(f.msg)
	if !rc.stores() {
		return f
	}
	end := rc.p.cfg.Store.Now()
	c := rc.newCall(store.StatusFailed, end)
	c.Execution.Error = f.msg
	a := rc.attrs()
	a["error.type"] = store.String(errType)
	if broken {
		a["sextant.proxy.stream_broken"] = store.Bool(true)
	}
	c.Spans = []store.Span{{Seq: 1, Name: rc.spanName(), Kind: store.SpanClient, Start: rc.start, End: end,
		Attributes: a, Status: store.SpanStatus{Code: store.CodeError, Message: f.msg}}}
	if rc.write(ctx, c) == nil {
		f.task = rc.task
	}
	return f
}

// answered records a live answer with its recording, or (replayed is
// the hash of the recording that answered) a replay.
func (rc *rawRecord) answered(ctx context.Context, o *observed, rec *recorded, latency time.Duration, replayed string) error {
	if !rc.stores() {
		return nil
	}
	st := rc.p.cfg.Store
	model := o.model
	if model == "" {
		model = rc.c.model
	}
	cost, priced := rc.p.cfg.Prices.Cost(model, o.in, o.out)
	end := rc.start.Add(latency)
	c := rc.newCall(store.StatusCompleted, end)
	a := rc.attrs()
	o.attrs(a)
	hash := rc.c.hash
	if replayed != "" {
		hash = replayed
	}
	a["sextant.recording"] = store.String(hash)
	a["sextant.recorded"] = store.Bool(replayed != "")
	a["sextant.cost_usd"] = store.Float(cost)
	a["sextant.priced"] = store.Bool(priced)
	a["sextant.latency_ms"] = store.Int(latency.Milliseconds())
	c.Spans = []store.Span{{Seq: 1, Name: rc.spanName(), Kind: store.SpanClient, Start: rc.start, End: end,
		Attributes: a, Status: store.SpanStatus{Code: store.CodeOK}}}
	if replayed != "" {
		c.Replayed = replayed
	} else {
		resp, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		c.Recording = &store.Recording{Hash: rc.c.hash, Kind: store.RecordChat, Provider: rc.block, Task: rc.task,
			Request: rc.p.scrub.bytes(rc.c.canon), Response: resp, Usage: sdk.Usage{InputTokens: o.in, OutputTokens: o.out},
			Latency: latency, Created: st.Now()}
	}
	return rc.write(ctx, c)
}

// chain is block and its fallbacks (theirs after them), the HTTP
// upstreams of api only.
func (p *Proxy) chain(block, api string) []string {
	var out []string
	seen := map[string]bool{}
	queue := []string{block}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		up, ok := p.cfg.Upstreams[name]
		if !ok || up.API != api {
			continue
		}
		out = append(out, name)
		queue = append(queue, up.Fallback...)
	}
	return out
}

// errUpstreamTimeout is an upstream that kept the proxy waiting longer
// than its block's timeout.
var errUpstreamTimeout = errors.New("the upstream did not answer within its timeout")

// idleBody is an upstream answer's body whose every read must make
// progress within the block's timeout: a stalled upstream ends the call
// instead of holding the client forever.
type idleBody struct {
	rc     io.ReadCloser
	t      *time.Timer
	d      time.Duration
	ctx    context.Context
	cancel context.CancelCauseFunc
}

func (b *idleBody) Read(p []byte) (int, error) {
	b.t.Reset(b.d)
	n, err := b.rc.Read(p)
	b.t.Stop()
	if err != nil && !errors.Is(err, io.EOF) && errors.Is(context.Cause(b.ctx), errUpstreamTimeout) {
		err = errUpstreamTimeout
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.t.Stop()
	b.cancel(nil)
	return b.rc.Close()
}

// send makes one attempt at up.
func (p *Proxy) send(ctx context.Context, c *rawCall, up Upstream, r *http.Request) (*http.Response, error) {
	body := c.body
	if up.Model != "" {
		var err error
		if body, err = withModel(c.body, up.Model); err != nil {
			return nil, fmt.Errorf("set the block's model: %w", err)
		}
	}
	timeout := up.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	actx, cancel := context.WithCancelCause(ctx)
	t := time.AfterFunc(timeout, func() { cancel(errUpstreamTimeout) })
	req, err := http.NewRequestWithContext(actx, http.MethodPost, up.BaseURL+c.rt.upstream, bytes.NewReader(body))
	if err != nil {
		t.Stop()
		cancel(nil)
		return nil, err
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	if c.stream {
		h.Set("Accept", "text/event-stream")
	} else {
		h.Set("Accept", "application/json")
	}
	switch up.API {
	case "anthropic":
		v := r.Header.Get("Anthropic-Version")
		if v == "" {
			v = "2023-06-01"
		}
		h.Set("Anthropic-Version", v)
		if b := r.Header.Get("Anthropic-Beta"); b != "" {
			h.Set("Anthropic-Beta", b)
		}
		if up.Key != "" {
			h.Set("X-Api-Key", up.Key)
		}
	default:
		if b := r.Header.Get("OpenAI-Beta"); b != "" {
			h.Set("OpenAI-Beta", b)
		}
		if up.Key != "" {
			h.Set("Authorization", "Bearer "+up.Key)
		}
	}
	resp, err := p.client.Do(req)
	if err != nil {
		t.Stop()
		if errors.Is(context.Cause(actx), errUpstreamTimeout) {
			err = errUpstreamTimeout
		}
		cancel(nil)
		return nil, err
	}
	t.Stop()
	resp.Body = &idleBody{rc: resp.Body, t: t, d: timeout, ctx: actx, cancel: cancel}
	return resp, nil
}

// retryStatus reports whether an upstream status is worth another try.
func retryStatus(code int) bool {
	return code == http.StatusTooManyRequests || code >= 500
}

// forward sends c as it is to block's upstream (then its fallbacks),
// passes the answer on as it arrives and records it.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, c *rawCall, block string) {
	ctx := r.Context()
	rc := p.newRawRecord(c, "live")
	rc.block = block
	t0 := time.Now()
	var (
		resp    *http.Response
		lastErr error
	)
chain:
	for _, name := range p.chain(block, c.rt.api) {
		up := p.cfg.Upstreams[name]
		for attempt := 0; attempt <= up.Retries; attempt++ {
			if attempt > 0 {
				wait := 200 * time.Millisecond << min(attempt-1, 6)
				if resp != nil {
					if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
						wait = min(time.Duration(s)*time.Second, 10*time.Second)
					}
				}
				select {
				case <-ctx.Done():
					break chain
				case <-time.After(wait):
				}
			}
			if resp != nil {
				resp.Body.Close()
				resp = nil
			}
			rc.block = name
			var err error
			resp, err = p.send(ctx, c, up, r)
			if err != nil {
				lastErr = err
				if ctx.Err() != nil {
					break chain
				}
				continue
			}
			if !retryStatus(resp.StatusCode) {
				break chain
			}
		}
	}
	if resp == nil {
		f := &failure{status: http.StatusBadGateway, class: "upstream", code: "upstream_error",
			msg: fmt.Sprintf("provider block %q: %v", rc.block, lastErr)}
		errType := "_OTHER"
		if errors.Is(lastErr, errUpstreamTimeout) {
			f.status, f.class, f.code, errType = http.StatusGatewayTimeout, "timeout", "upstream_timeout", "timeout"
		}
		if lastErr == nil {
			f.msg = fmt.Sprintf("provider block %q: no upstream of the %s API to try", block, c.rt.api)
		}
		f = rc.failed(ctx, f, errType, false)
		writeHeaders(w, f.task, "", false)
		c.rt.writeError(w, f)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		p.upstreamError(w, c, rc, resp)
		return
	}
	ct := resp.Header.Get("Content-Type")
	if strings.HasPrefix(strings.ToLower(ct), "text/event-stream") {
		if !c.stream {
			p.streamWhole(w, c, rc, resp, t0)
			return
		}
		p.streamOut(w, c, rc, resp, ct, t0)
		return
	}
	p.plainOut(w, c, rc, resp, ct, t0)
}

// upstreamError passes an upstream's refusal on in the API's shape, with
// the keys the host holds scrubbed from it.
func (p *Proxy) upstreamError(w http.ResponseWriter, c *rawCall, rc *rawRecord, resp *http.Response) {
	ctx := context.Background()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	b = p.scrub.bytes(b)
	errType := strconv.Itoa(resp.StatusCode)
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		// The upstream refused the proxy's key, not the client's: a
		// gateway problem, which the client's SDK must not report as its
		// own wrong key.
		f := rc.failed(ctx, &failure{status: http.StatusBadGateway, class: "upstream", code: "upstream_auth",
			msg: fmt.Sprintf("provider block %q: the upstream refused the proxy's key (%d): %.1000s", rc.block, resp.StatusCode, b)}, errType, false)
		writeHeaders(w, f.task, "", false)
		c.rt.writeError(w, f)
		return
	}
	if !json.Valid(b) {
		f := rc.failed(ctx, &failure{status: http.StatusBadGateway, class: "upstream", code: "upstream_error",
			msg: fmt.Sprintf("provider block %q answered %d: %.1000s", rc.block, resp.StatusCode, b)}, errType, false)
		writeHeaders(w, f.task, "", false)
		c.rt.writeError(w, f)
		return
	}
	f := rc.failed(ctx, &failure{status: resp.StatusCode, msg: fmt.Sprintf("provider block %q answered %d: %.1000s", rc.block, resp.StatusCode, b)}, errType, false)
	writeHeaders(w, f.task, "", false)
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		w.Header().Set("Retry-After", ra)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(b)
}

// readFailure is a failed read of an upstream's answer.
func readFailure(block string, err error) (*failure, string) {
	if errors.Is(err, errUpstreamTimeout) {
		return &failure{status: http.StatusGatewayTimeout, class: "timeout", code: "upstream_timeout",
			msg: fmt.Sprintf("provider block %q: %v", block, err)}, "timeout"
	}
	return &failure{status: http.StatusBadGateway, class: "upstream", code: "upstream_error",
		msg: fmt.Sprintf("provider block %q: read the answer: %v", block, err)}, "_OTHER"
}

// plainOut passes on a whole (unstreamed) answer, recorded first: a
// proxy that cannot record says so rather than answer.
func (p *Proxy) plainOut(w http.ResponseWriter, c *rawCall, rc *rawRecord, resp *http.Response, ct string, t0 time.Time) {
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponse+1))
	var f *failure
	errType := "_OTHER"
	switch {
	case err != nil:
		f, errType = readFailure(rc.block, err)
	case len(b) > MaxResponse:
		f = &failure{status: http.StatusBadGateway, class: "upstream", code: "upstream_error",
			msg: fmt.Sprintf("provider block %q: the answer is larger than %d bytes", rc.block, MaxResponse)}
	case !json.Valid(b):
		f = &failure{status: http.StatusBadGateway, class: "upstream", code: "upstream_error",
			msg: fmt.Sprintf("provider block %q answered with something that is not JSON: %.200q", rc.block, p.scrub.bytes(b))}
		errType = "sextant.bad_answer"
	}
	if f != nil {
		p.failWhole(w, c, rc, f, errType)
		return
	}
	p.wholeOut(w, c, rc, resp.StatusCode, ct, p.scrub.bytes(b), t0)
}

// failWhole records a call failed before any byte of its answer reached
// the client, and answers it f.
func (p *Proxy) failWhole(w http.ResponseWriter, c *rawCall, rc *rawRecord, f *failure, errType string) {
	f = rc.failed(context.Background(), f, errType, false)
	writeHeaders(w, f.task, "", false)
	c.rt.writeError(w, f)
}

// wholeOut records and passes on the whole answer b (JSON, scrubbed). A
// streamed call gets it as the events its API sends for it, as a replay
// in the other mode does: the upstream answered whole, as a server that
// ignores stream may, and the client's SDK, reading an event stream,
// would otherwise see none and report an empty answer.
func (p *Proxy) wholeOut(w http.ResponseWriter, c *rawCall, rc *rawRecord, status int, ct string, b []byte, t0 time.Time) {
	ctx := context.Background()
	latency := time.Since(t0)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	o := observe(c.rt, m)
	if ct == "" {
		ct = "application/json"
	}
	streamed := c.stream && c.rt != routeEmbeddings
	if streamed {
		usage, _ := obj(c.fields["stream_options"])["include_usage"].(bool)
		sb, err := synthesize(c.rt, b, usage)
		if err != nil {
			p.failWhole(w, c, rc, &failure{status: http.StatusBadGateway, class: "upstream", code: "upstream_error",
				msg: fmt.Sprintf("provider block %q answered a streamed call whole, with no streamed form: %v", rc.block, err)}, "sextant.bad_answer")
			return
		}
		b, ct = sb, "text/event-stream; charset=utf-8"
	}
	task, hash := rc.task, c.hash
	if msg := unfinished(c.rt, m); msg != "" {
		// The upstream answered with a response that did not finish: as
		// its streamed response.failed is, passed on as it was, recorded
		// failed, never replayed.
		f := rc.failed(ctx, &failure{status: http.StatusBadGateway, msg: fmt.Sprintf("provider block %q: %s", rc.block, msg)}, "sextant.response_failed", false)
		task, hash = f.task, ""
	} else if err := rc.answered(ctx, &o, newRecorded(ct, streamed, b, o.text), latency, ""); err != nil {
		c.rt.writeError(w, &failure{status: http.StatusInternalServerError, class: "internal", code: "record_error",
			msg: fmt.Sprintf("the answer could not be recorded: %v", p.scrub.string(err.Error()))})
		return
	}
	writeHeaders(w, task, hash, false)
	w.Header().Set("Content-Type", ct)
	if streamed {
		w.Header().Set("Cache-Control", "no-cache")
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// unfinished says why a whole Responses answer m is not a finished
// response, or "" when it is one. The API's statuses are completed and
// incomplete (finished: a streamed call ends them with
// response.completed and response.incomplete, recorded), failed (its
// streamed response.failed is not recorded), cancelled, and queued and
// in_progress (a background response, whose stream would have been cut
// short): none of these last four is an answer to replay.
func unfinished(rt *route, m map[string]any) string {
	if rt != routeResponses {
		return ""
	}
	switch s := str(m["status"]); s {
	case "failed":
		if msg := str(obj(m["error"])["message"]); msg != "" {
			return "the upstream's response failed: " + msg
		}
		return "the upstream reported a failed response"
	case "cancelled", "queued", "in_progress":
		return fmt.Sprintf("the upstream's response is %s, not finished", s)
	}
	return ""
}

// staleUnfinished says why env, a recording of a call on route rt, is
// a whole Responses answer that did not finish (unfinished), or "": a
// proxy older than the check recorded such an answer as a good one, and
// replay refuses it as the failed call a proxy records now. Only a whole
// answer is read: a stream that did not finish was never recorded.
func staleUnfinished(rt *route, env *recorded) string {
	if rt != routeResponses || env.Stream || env.Status != http.StatusOK {
		return ""
	}
	var m map[string]any
	if json.Unmarshal(env.bytes(), &m) != nil {
		return ""
	}
	return unfinished(rt, m)
}

// streamWhole answers a whole (unstreamed) call the upstream answered
// with an event stream: the stream is read to its end and checked
// complete as a streamed call's is, and the answer its events assemble to
// is what the client, which reads one JSON document, gets and what is
// recorded.
func (p *Proxy) streamWhole(w http.ResponseWriter, c *rawCall, rc *rawRecord, resp *http.Response, t0 time.Time) {
	sr := sseread.NewReader(resp.Body)
	asm := newAssembler(c.rt.path, c.fields)
	size := 0
	var broken error
	for broken == nil {
		raw, err := sr.Next()
		if err == io.EOF {
			break
		}
		switch {
		case errors.Is(err, io.ErrUnexpectedEOF):
			broken = errors.New("the stream was cut short: the upstream's connection ended before its body did")
		case err != nil:
			broken = err
		case size+len(raw) > MaxResponse:
			broken = fmt.Errorf("the stream is larger than %d bytes", MaxResponse)
		default:
			size += len(raw)
			broken = asm.add(sr.Event(p.scrub.bytes(raw)))
		}
	}
	if broken == nil && asm.failed() != "" && (c.rt != routeResponses || str(asm.whole()["status"]) != "failed") {
		broken = fmt.Errorf("the upstream's stream ended in an error: %s", asm.failed())
	}
	// A Responses stream ended by response.failed assembles to the failed
	// response, which wholeOut passes on and records failed (unfinished),
	// as it does the same answer sent whole.
	if m := asm.missing(); broken == nil && m != "" {
		broken = fmt.Errorf("the stream was cut short: it ended before %s", m)
	}
	if broken != nil {
		f, errType := readFailure(rc.block, broken)
		if !errors.Is(broken, errUpstreamTimeout) {
			f.msg = fmt.Sprintf("provider block %q: %v", rc.block, broken)
		}
		p.failWhole(w, c, rc, f, errType)
		return
	}
	b, err := json.Marshal(asm.whole())
	if err != nil {
		p.failWhole(w, c, rc, &failure{status: http.StatusBadGateway, class: "upstream", code: "upstream_error",
			msg: fmt.Sprintf("provider block %q: assemble its stream: %v", rc.block, err)}, "sextant.bad_answer")
		return
	}
	p.wholeOut(w, c, rc, resp.StatusCode, "application/json", b, t0)
}

// streamOut passes an upstream's event stream on event by event as it
// arrives, every event checked first (an event that is not the API's
// ends the stream with an error event), and records it when it ended
// complete: cleanly, and holding what the API's complete stream holds.
func (p *Proxy) streamOut(w http.ResponseWriter, c *rawCall, rc *rawRecord, resp *http.Response, ct string, t0 time.Time) {
	ctx := context.Background()
	sr := sseread.NewReader(resp.Body)
	asm := newAssembler(c.rt.path, c.fields)
	rctl := http.NewResponseController(w)
	var (
		out     bytes.Buffer
		started bool
		broken  error
	)
	for {
		raw, err := sr.Next()
		if err == io.EOF {
			if started && len(raw) > 0 && out.Len()+len(raw) <= MaxResponse {
				// What followed the last event (blank lines, comments)
				// is the client's too, live and replayed.
				raw = p.scrub.bytes(raw)
				_, _ = w.Write(raw)
				out.Write(raw)
			}
			break
		}
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				err = errors.New("the stream was cut short: the upstream's connection ended before its body did")
			}
			broken = err
			break
		}
		raw = p.scrub.bytes(raw)
		if err := asm.add(sr.Event(raw)); err != nil {
			broken = err
			break
		}
		if out.Len()+len(raw) > MaxResponse {
			broken = fmt.Errorf("the stream is larger than %d bytes", MaxResponse)
			break
		}
		if !started {
			started = true
			writeHeaders(w, rc.task, c.hash, false)
			w.Header().Set("Content-Type", ct)
			w.Header().Set("Cache-Control", "no-cache")
			w.WriteHeader(http.StatusOK)
		}
		_, _ = w.Write(raw)
		_ = rctl.Flush()
		out.Write(raw)
	}
	if m := asm.missing(); broken == nil && m != "" && asm.failed() == "" {
		broken = fmt.Errorf("the stream was cut short: it ended before %s", m)
	}
	if broken != nil {
		f, errType := readFailure(rc.block, broken)
		if !errors.Is(broken, errUpstreamTimeout) {
			f.msg = fmt.Sprintf("provider block %q: %v", rc.block, broken)
		}
		if !started {
			f = rc.failed(ctx, f, errType, false)
			writeHeaders(w, f.task, "", false)
			c.rt.writeError(w, f)
			return
		}
		f = rc.failed(ctx, f, errType, true)
		writeStreamError(w, c.rt, f)
		_ = rctl.Flush()
		return
	}
	latency := time.Since(t0)
	if msg := asm.failed(); msg != "" {
		// The upstream ended its stream with an error of its own: passed
		// on as it was, recorded failed, never replayed.
		rc.failed(ctx, &failure{status: http.StatusBadGateway, msg: fmt.Sprintf("provider block %q: %s", rc.block, msg)}, "sextant.stream_error", false)
		return
	}
	o := observe(c.rt, asm.whole())
	if err := rc.answered(ctx, &o, newRecorded(ct, true, out.Bytes(), o.text), latency, ""); err != nil {
		p.log.Error("record streamed call", "task", rc.task, "err", p.scrub.string(err.Error()))
	}
}

// writeStreamError ends a stream that broke after its first event with
// an error event in the API's shape, which the official clients raise.
func writeStreamError(w http.ResponseWriter, rt *route, f *failure) {
	var b []byte
	switch rt.path {
	case RouteMessages:
		b, _ = json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": anthropicErrorType(f), "message": f.msg}})
		b = append([]byte("event: error\ndata: "), b...)
	case RouteResponses:
		b, _ = json.Marshal(map[string]any{"type": "error", "code": f.code, "message": f.msg, "param": nil})
		b = append([]byte("event: error\ndata: "), b...)
	default:
		b, _ = json.Marshal(map[string]any{"error": openAIErrorBody(f)})
		b = append([]byte("data: "), b...)
	}
	_, _ = w.Write(append(b, "\n\n"...))
}

// replayRaw answers c from its recording: the recorded bytes as they
// were, a streamed call's as the same event stream. A recording made in
// the other mode answers too (assembled or synthesized: see below), and
// so does one the translated path made (a block that is not an HTTP
// upstream), as that path does.
func (p *Proxy) replayRaw(w http.ResponseWriter, r *http.Request, c *rawCall) {
	ctx := r.Context()
	st := p.cfg.Store
	rc := p.newRawRecord(c, "replay")
	t0 := time.Now()
	hash := c.hash
	var (
		rec  *store.Recording
		body []byte
		env  recorded
		bad  errNotPassThrough
	)
	cached, err := p.replays.get(ctx, st, hash, c.rt)
	unfinished := ""
	switch {
	case errors.As(err, &bad):
		c.rt.writeError(w, &failure{status: http.StatusInternalServerError, class: "internal", code: "bad_recording",
			msg: fmt.Sprintf("recording %s is not a pass-through recording: %v", hash[:16], bad.err)})
		return
	case err == nil && cached.unfinished != "":
		// Recorded as an answer before such answers were recorded
		// failed: a miss, as the failed call a proxy records now is.
		unfinished, err = cached.unfinished, store.ErrNotFound
	case err == nil:
		rec, env, body = cached.rec, cached.env, cached.body
	}
	if errors.Is(err, store.ErrNotFound) {
		// Recorded in the other mode: a stream answers a whole call with
		// the answer its events assemble to, a whole answer a streamed
		// call with the events the API sends for it.
		if other, oerr := st.Recording(ctx, c.other); oerr == nil && json.Unmarshal(other.Response, &env) == nil && env.Status == http.StatusOK {
			var b []byte
			var cerr error
			switch u := staleUnfinished(c.rt, &env); {
			case u != "":
				unfinished, cerr = u, errors.New(u)
			case env.Stream && !c.stream:
				b, cerr = assemble(c.rt, env.bytes())
				env.ContentType = "application/json"
			case !env.Stream && c.stream:
				usage, _ := obj(c.fields["stream_options"])["include_usage"].(bool)
				b, cerr = synthesize(c.rt, env.bytes(), usage)
				env.ContentType = "text/event-stream; charset=utf-8"
			default:
				cerr = errors.New("same mode")
			}
			if cerr == nil {
				rec, hash, body, err = other, c.other, b, nil
				env.Stream = c.stream
			}
		}
		if body == nil && p.replayTranslated(w, r, c) {
			return
		}
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		msg := fmt.Sprintf("replay: no recording answers this request (request hash %s); record it first with the proxy out of replay mode", c.hash[:16])
		if unfinished != "" {
			msg += " (its recording holds an answer that is not replayed: " + unfinished + ")"
		}
		f := rc.failed(ctx, &failure{status: http.StatusNotFound, class: "not_found", code: "recording_not_found", msg: msg},
			"sextant.replay_miss", false)
		writeHeaders(w, f.task, c.hash, false)
		c.rt.writeError(w, f)
		return
	case err != nil:
		c.rt.writeError(w, &failure{status: http.StatusInternalServerError, class: "internal", code: "store_error", msg: err.Error()})
		return
	}
	if rc.task == "" {
		rc.task = rec.Task
	}
	rc.block = rec.Provider
	if rc.stores() {
		o := observed{in: rec.Usage.InputTokens, out: rec.Usage.OutputTokens, text: env.Text}
		if err := rc.answered(ctx, &o, nil, time.Since(t0), hash); err != nil {
			c.rt.writeError(w, &failure{status: http.StatusInternalServerError, class: "internal", code: "record_error",
				msg: fmt.Sprintf("the replay could not be recorded: %v", err)})
			return
		}
	}
	writeHeaders(w, rc.task, hash, true)
	h := w.Header()
	if env.ContentType != "" {
		h.Set("Content-Type", env.ContentType)
	}
	if env.Stream && c.stream {
		h.Set("Cache-Control", "no-cache")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(env.Status)
	_, _ = w.Write(body)
}

// assemble turns a recorded event stream into the whole answer it
// assembles to.
func assemble(rt *route, stream []byte) ([]byte, error) {
	sr := sseread.NewReader(bytes.NewReader(stream))
	asm := newAssembler(rt.path, nil)
	for {
		raw, err := sr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if err := asm.add(sr.Event(raw)); err != nil {
			return nil, err
		}
	}
	return json.Marshal(asm.whole())
}

// replayTranslated answers c from a recording the translated path made,
// when the request is one that path carries and such a recording exists.
func (p *Proxy) replayTranslated(w http.ResponseWriter, r *http.Request, c *rawCall) bool {
	var tc *call
	var f *failure
	switch c.rt {
	case routeChat:
		tc, f = decodeOpenAI(c.body, r)
	case routeMessages:
		tc, f = decodeAnthropic(c.body, r)
	default:
		return false
	}
	if f != nil {
		return false
	}
	hash, _, err := store.ChatKey(p.cfg.Store.Redactor(), &tc.req)
	if err != nil {
		return false
	}
	if _, err := p.cfg.Store.Recording(r.Context(), hash); err != nil {
		return false
	}
	tc.replay = true
	if c.rt == routeChat {
		p.answerOpenAI(w, r, tc)
	} else {
		p.answerAnthropic(w, r, tc)
	}
	return true
}
