// Package proxy is sextant's recording proxy: OpenAI-compatible
// POST /v1/chat/completions, /v1/responses and /v1/embeddings and an
// Anthropic-compatible POST /v1/messages that forward each call to the
// upstream a [providers.NAME] block names and record it in the store as
// a task, an execution, a GenAI span and a recording — or, in replay
// mode, answer it from its recording and never call upstream.
//
// Any agent, in any language and on any SDK, gets recording and keyless
// replay by pointing its client's base URL at the proxy. The package
// serves HTTP handlers only: listening, authentication and request size
// limits belong to the server that mounts them (host/serve).
//
// # Which provider block answers
//
// A request's model selects the [providers.NAME] block named exactly like
// it, else the block named like the route's API ([providers.openai],
// [providers.anthropic]), else [providers.default]; no such block is a
// 404 in the API's own error shape.
//
// A block with use = "openai" (for the three OpenAI routes) or use =
// "anthropic" (for /v1/messages) is an HTTP upstream: the client's body
// is forwarded as it is to the block's base_url with the block's API key
// (its api_key_env) as the upstream's own auth header, only the model
// replaced when the block sets one. Whatever the request carries — tools,
// images, JSON schemas, n, reasoning options, parameters sextant has
// never heard of — reaches the upstream unchanged, and the answer's bytes
// (whole, or an event stream passed on event by event as it arrives)
// reach the client unchanged, the keys the host holds scrubbed out; an
// answer in the other form than the client asked (whole to a streamed
// call, or a stream to a whole one) reaches it converted, as a replay in
// the other mode does.
// Retries (the block's retries, on a connection error, 429 or 5xx) and
// fallbacks (blocks of the same API) happen before the first byte
// reaches the client. Tokens, cost, finish reasons and the messages with
// their tool calls and tool results are read from the request and the
// answer for the span when present, never required.
//
// Any other block (a plugin such as the offline script provider, or an
// HTTP provider of the other API) is served translated: the request is
// decoded into an sdk.ChatRequest and sent through run.Providers (retries,
// fallback, breaker), which carries messages, model, temperature, max
// tokens, stop sequences and JSON mode; any other parameter is a 400
// naming it, never dropped. /v1/responses and /v1/embeddings have no
// translated form.
//
// # Which task a call belongs to
//
// The X-Sextant-Task header, else (OpenAI) metadata.sextant_task or user,
// (Anthropic) metadata.user_id, else a new task per call. A group key that
// is a valid task id (letters, digits, ._:+-) is the task id; any other is
// hashed into one ("proxy-" and 24 hex digits).
//
// # Replay
//
// A forwarded call's recording is keyed by its route, whether it was
// streamed, and its canonical form: the JSON body with the fields that do
// not change the answer dropped (stream, stream_options, user, metadata,
// store, safety_identifier, prompt_cache_key; for Anthropic stream and
// metadata) and object keys sorted. Replay returns the recorded bytes; a
// call recorded streamed also answers the same question asked unstreamed
// with the answer its events assemble to. Replay is on for every call
// when Config.Replay is set, or for one call with the header
// X-Sextant-Replay: 1; a header never turns a replaying proxy live. A
// replayed call is stored (as a replay execution of its task) only with
// Config.RecordReplays.
package proxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sextant-dev/sextant/host/internal/jsonbound"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// Headers the proxy reads and writes.
const (
	// HeaderTask groups calls into a task (request) and names the task a
	// call was recorded in (response).
	HeaderTask = "X-Sextant-Task"
	// HeaderReplay set to 1 or true answers one call from recordings.
	HeaderReplay = "X-Sextant-Replay"
	// HeaderRecorded says (response) whether a recording answered.
	HeaderRecorded = "X-Sextant-Recorded"
	// HeaderHash is (response) the call's canonical request hash.
	HeaderHash = "X-Sextant-Request-Hash"
)

// MaxBody is the largest request body the proxy reads.
const MaxBody = 8 << 20

// Config is what a Proxy needs.
type Config struct {
	// Store records the calls and holds the recordings. Required.
	Store *store.Store
	// Providers answers live calls; nil means every call must be
	// replayed.
	Providers *run.Providers
	// Prices prices the calls; nil means run.DefaultPrices().
	Prices run.Prices
	// Replay answers every call from recordings.
	Replay bool
	// Name is the pipeline name of the tasks the proxy records; "" means
	// "proxy".
	Name   string
	Logger *slog.Logger
	// OnSpans, when set, is given each call's spans once recorded (live
	// telemetry: telemetry.Exporter.Spans). It must not block.
	OnSpans func(spans []store.Span)
	// Upstreams are the provider blocks forwarded to as they are, by
	// name (NewUpstreams); a block of Providers not among them is served
	// translated.
	Upstreams map[string]Upstream
	// Secrets are the keys the host holds (the upstreams' keys, the
	// server's token): scrubbed from every answer, record and log line.
	Secrets []string
	// RecordReplays stores each replayed call as a replay execution of
	// its task; by default a replay stores nothing.
	RecordReplays bool
	// Client sends the forwarded calls; nil means a client of the
	// proxy's own.
	Client *http.Client
	// DecodeBudget bounds, in bytes, what the calls being served may hold
	// decoded at once, as estimated from their bodies; a call past it is
	// a 503 with Retry-After. 0 means DefaultDecodeBudget.
	DecodeBudget int64
}

// Proxy serves the recording proxy's routes. It is safe for concurrent use.
type Proxy struct {
	cfg    Config
	log    *slog.Logger
	scrub  *scrubber
	client *http.Client
	// replays keeps the recordings replays answer with, decoded.
	replays replayCache
	budget  *budget
}

// New returns a proxy over cfg.
func New(cfg Config) (*Proxy, error) {
	if cfg.Store == nil {
		return nil, errors.New("proxy: no store")
	}
	if cfg.Name == "" {
		cfg.Name = "proxy"
	}
	if cfg.Prices == nil {
		cfg.Prices = run.DefaultPrices()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	secrets := slices.Clone(cfg.Secrets)
	for _, up := range cfg.Upstreams {
		secrets = append(secrets, up.Key)
	}
	client := cfg.Client
	if client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 64
		client = &http.Client{Transport: tr, CheckRedirect: sameOrigin}
	}
	scrub := newScrubber(secrets)
	if cfg.DecodeBudget <= 0 {
		cfg.DecodeBudget = DefaultDecodeBudget
	}
	return &Proxy{cfg: cfg, log: newScrubLogger(cfg.Logger, scrub).With("component", "proxy"), scrub: scrub, client: client,
		budget: &budget{jsonbound.Budget{Limit: cfg.DecodeBudget}}}, nil
}

// sameOrigin follows an upstream's redirect only within its origin: the
// key goes in a header (x-api-key, or Authorization, which net/http keeps
// for another port of the same host), so a redirect elsewhere would hand
// it to whoever the upstream, or anyone on a plain-HTTP path to it, names.
func sameOrigin(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if from := via[0].URL; req.URL.Scheme != from.Scheme || req.URL.Host != from.Host {
		return fmt.Errorf("the upstream redirected to %s://%s, another origin: not followed, so the block's key is not sent there", req.URL.Scheme, req.URL.Host)
	}
	return nil
}

// The routes the proxy serves.
const (
	RouteChatCompletions = "/v1/chat/completions"
	RouteResponses       = "/v1/responses"
	RouteEmbeddings      = "/v1/embeddings"
	RouteMessages        = "/v1/messages"
)

// Handlers returns the proxy's routes, keyed by path, for a server to
// mount (serve.Options.Handlers). Each also writes the server's 401 in
// its provider's error shape (WriteUnauthorized), so an agent's SDK
// reports a missing or wrong token as it reports a wrong API key.
func (p *Proxy) Handlers() map[string]http.Handler {
	h := make(map[string]http.Handler, len(routes))
	for _, rt := range routes {
		h[rt.path] = routeHandler{p: p, rt: rt}
	}
	return h
}

// ServeHTTP serves every route (for use without a server's mux).
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for _, rt := range routes {
		if r.URL.Path == rt.path {
			p.serveRoute(w, r, rt)
			return
		}
	}
	http.NotFound(w, r)
}

// call is one request, decoded from either API.
type call struct {
	api    string // "openai" | "anthropic"
	req    sdk.ChatRequest
	stream bool
	// streamUsage asks for a final usage chunk (OpenAI
	// stream_options.include_usage).
	streamUsage bool
	group       string // the grouping key; "" = one task per call
	replay      bool
	block       string // the provider block answering it; "" = by model
}

// answer is how a call was answered.
type answer struct {
	resp     *sdk.ChatResponse
	hash     string
	task     string
	created  time.Time
	recorded bool // answered from a recording
}

// failure is a call that could not be answered, rendered by each API in
// its own error shape.
type failure struct {
	status     int
	class      string // invalid_request | not_found | rate_limit | auth | upstream | overloaded | timeout | internal
	code       string
	msg        string
	param      string
	retryAfter time.Duration
	task       string
}

func (f *failure) Error() string { return f.msg }

func badRequest(code, param, format string, args ...any) *failure {
	return &failure{status: http.StatusBadRequest, class: "invalid_request", code: code, param: param, msg: fmt.Sprintf(format, args...)}
}

// decodeStrict decodes a request body for the translated path: a key
// the request type lacks is an error, never dropped.
func decodeStrict(body []byte, v any) *failure {
	dec := json.NewDecoder(bytes.NewReader(body))
	// Parameters the provider chain cannot carry are refused, never
	// dropped: dropping one would silently change the answer.
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typeErr) && typeErr.Field == "":
			return badRequest("invalid_request", "", "request body must be a JSON object, not %s", typeErr.Value)
		case errors.As(err, &typeErr):
			return badRequest("invalid_value", typeErr.Field, "%s: want %s, got %s", typeErr.Field, jsonType(typeErr.Type.Kind().String()), typeErr.Value)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			name, _ := strconv.Unquote(strings.TrimPrefix(err.Error(), "json: unknown field "))
			return &failure{status: http.StatusBadRequest, class: "invalid_request", code: unknownFieldCode, param: name}
		}
		return badRequest("invalid_json", "", "request body is not valid JSON: %v", strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return badRequest("invalid_json", "", "request body holds more than one JSON value")
	}
	return nil
}

const unknownFieldCode = "unknown_field"

// unknownField reports the parameter a failure of readBody names when
// the body held a key the request type lacks.
func unknownField(f *failure) (string, bool) {
	return f.param, f.code == unknownFieldCode
}

// jsonType names a Go kind as JSON does.
func jsonType(kind string) string {
	switch kind {
	case "float64", "float32", "int", "int64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice":
		return "an array"
	case "map", "struct", "ptr":
		return "an object"
	}
	return kind
}

// groupTask is the task id of a grouping key.
func groupTask(key string) string {
	if validTaskID(key) {
		return key
	}
	sum := sha256.Sum256([]byte("sextant.proxy.group.v1\x00" + key))
	return "proxy-" + hex.EncodeToString(sum[:12])
}

func validTaskID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			i > 0 && (c == '.' || c == '_' || c == ':' || c == '+' || c == '-')
		if !ok {
			return false
		}
	}
	return true
}

func replayHeader(r *http.Request) (bool, *failure) {
	switch v := strings.ToLower(strings.TrimSpace(r.Header.Get(HeaderReplay))); v {
	case "":
		return false, nil
	case "1", "true", "yes":
		return true, nil
	case "0", "false", "no":
		return false, nil
	default:
		return false, badRequest("invalid_header", HeaderReplay, "%s: %q is not a boolean (want 1 or 0)", HeaderReplay, v)
	}
}

// liveStream is how a route passes a streamed answer on as it arrives
// (record mode, stream: true): open writes the headers and the opening
// events at the first delta (or before the final events of an empty
// answer), delta one piece of text. Writes to a client that hung up are
// lost, never an error: the call is recorded all the same.
type liveStream struct {
	open    func(task, hash string, created time.Time)
	delta   func(text string)
	started bool
}

// chat answers c: from its recording in replay, else through the provider
// chain; either way the call is recorded before the answer is returned.
// With ls (a streamed call), a live answer is passed on through ls as it
// arrives, and the returned answer (or failure) comes after it: a failure
// once ls started is the stream's end, not an HTTP status.
func (p *Proxy) chat(ctx context.Context, c *call, ls *liveStream) (*answer, *failure) {
	st := p.cfg.Store
	hash, _, err := store.ChatKey(st.Redactor(), &c.req)
	if err != nil {
		return nil, badRequest("invalid_request", "", "%v", err)
	}
	rc := &record{p: p, c: c, hash: hash, start: st.Now()}
	if c.group != "" {
		rc.task = groupTask(c.group)
	} else {
		rc.task = st.NewID()
	}
	replay := c.replay || p.cfg.Replay
	if replay {
		rec, err := st.Recording(ctx, hash)
		if errors.Is(err, store.ErrNotFound) {
			f := &failure{status: http.StatusNotFound, class: "not_found", code: "recording_not_found",
				msg: fmt.Sprintf("replay: no recording answers this request (request hash %s); record it first with the proxy out of replay mode", hash[:16])}
			return nil, rc.failed(ctx, f, "sextant.replay_miss", "")
		}
		if err != nil {
			return nil, rc.failed(ctx, &failure{status: http.StatusInternalServerError, class: "internal", code: "store_error", msg: err.Error()}, "sextant.store_error", "")
		}
		var resp sdk.ChatResponse
		if err := json.Unmarshal(rec.Response, &resp); err != nil {
			return nil, rc.failed(ctx, &failure{status: http.StatusInternalServerError, class: "internal", code: "bad_recording",
				msg: fmt.Sprintf("recording %s: %v", hash[:16], err)}, "sextant.bad_recording", "")
		}
		return rc.answered(ctx, &resp, rec.Provider, rec.Latency, rec.Created, true)
	}
	if p.cfg.Providers == nil {
		return nil, rc.failed(ctx, &failure{status: http.StatusNotFound, class: "not_found", code: "model_not_found",
			msg: "the proxy has no providers (start it with a server config declaring [providers.default], or in replay mode)"}, "sextant.no_provider", "")
	}
	block := c.block
	if block == "" {
		block = c.req.Model
	}
	prov, ok := p.cfg.Providers.Get(block)
	if !ok {
		block = "default"
		if prov, ok = p.cfg.Providers.Get(block); !ok {
			return nil, rc.failed(ctx, &failure{status: http.StatusNotFound, class: "not_found", code: "model_not_found", param: "model",
				msg: fmt.Sprintf("model %q: no [providers.%s] block and no [providers.default] in the server config", c.req.Model, c.req.Model)}, "sextant.no_provider", "")
		}
	}
	rc.block = block
	req := c.req
	if prov.Model != "" {
		req.Model = "" // each block of the chain sends its own model
	}
	t0 := time.Now()
	var (
		resp    *sdk.ChatResponse
		used    string
		created time.Time
	)
	if ls == nil {
		resp, used, _, err = p.cfg.Providers.Chat(ctx, block, &req)
	} else {
		created = st.Now() // the chunks carry it before the answer ends
		resp, used, _, err = p.cfg.Providers.ChatStream(ctx, block, &req, func(d string) error {
			if !ls.started {
				ls.started = true
				ls.open(rc.task, hash, created)
			}
			ls.delta(d)
			return nil
		})
	}
	latency := time.Since(t0)
	if err != nil {
		var broken *run.StreamBrokenError
		rc.broken = errors.As(err, &broken)
		return nil, rc.failed(ctx, upstreamFailure(err), errorType(err), block)
	}
	rc.block = used
	return rc.answered(ctx, resp, used, latency, created, false)
}

// upstreamFailure maps a provider chain's error to an HTTP failure.
func upstreamFailure(err error) *failure {
	f := &failure{status: http.StatusBadGateway, class: "upstream", code: "upstream_error", msg: err.Error()}
	var se *sdk.Error
	if !errors.As(err, &se) {
		if errors.Is(err, run.ErrCircuitOpen) {
			// A 503 says when to come back: when the breaker lets its
			// next probe through, at least a second from now.
			f.status, f.class, f.code, f.retryAfter = http.StatusServiceUnavailable, "overloaded", "circuit_open", time.Second
			var co *run.CircuitOpenError
			if errors.As(err, &co) {
				f.retryAfter = max(co.RetryIn, time.Second)
			}
		}
		return f
	}
	switch se.Code {
	case sdk.CodeRateLimited:
		f.status, f.class, f.code, f.retryAfter = http.StatusTooManyRequests, "rate_limit", "rate_limited", se.RetryAfter
	case sdk.CodeTimeout:
		f.status, f.class, f.code = http.StatusGatewayTimeout, "timeout", "upstream_timeout"
	case sdk.CodeUnavailable:
		f.status, f.class, f.code, f.retryAfter = http.StatusServiceUnavailable, "overloaded", "upstream_unavailable", max(se.RetryAfter, time.Second)
	case sdk.CodeBadRequest, sdk.CodeInvalid:
		f.status, f.class, f.code = http.StatusBadRequest, "invalid_request", "upstream_rejected"
	case sdk.CodeAuth:
		// The upstream refused the proxy's key, not the client's: a
		// gateway problem.
		f.code = "upstream_auth"
	}
	return f
}

// errorType is the error.type attribute of a failed call: the sdk error
// code, else the Go type.
func errorType(err error) string {
	var se *sdk.Error
	if errors.As(err, &se) {
		return string(se.Code)
	}
	if errors.Is(err, run.ErrCircuitOpen) {
		return "circuit_open"
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return "timeout"
	}
	return "_OTHER"
}

// record is one call being recorded.
type record struct {
	p     *Proxy
	c     *call
	hash  string
	task  string
	block string
	start time.Time
	// broken: a streamed answer failed after its first delta reached the
	// client (recorded failed, with no recording).
	broken bool
}

func (rc *record) spanAttrs(resp *sdk.ChatResponse) store.Attributes {
	plugin := ""
	if rc.block != "" && rc.p.cfg.Providers != nil {
		if pr, ok := rc.p.cfg.Providers.Get(rc.block); ok {
			plugin = pr.Plugin.Describe().Name
		}
	}
	a := store.ChatSpanAttributes(plugin, &rc.c.req, resp)
	a["sextant.request_hash"] = store.String(rc.hash)
	a["sextant.proxy.api"] = store.String(rc.c.api)
	a["sextant.proxy.stream"] = store.Bool(rc.c.stream)
	if rc.broken {
		a["sextant.proxy.stream_broken"] = store.Bool(true)
	}
	if rc.block != "" {
		a["sextant.provider"] = store.String(rc.block)
	}
	return a
}

func (rc *record) write(ctx context.Context, c *store.Call) error {
	ctx = context.WithoutCancel(ctx) // a client that hung up is still recorded
	st := rc.p.cfg.Store
	if err := st.RecordCall(ctx, c); err != nil {
		rc.p.log.Error("record call", "task", c.Task.ID, "err", err)
		return err
	}
	if rc.p.cfg.OnSpans != nil {
		rc.p.cfg.OnSpans(c.Spans)
	}
	return nil
}

func (rc *record) newCall(status store.Status, mode string, end time.Time) *store.Call {
	tstatus := store.StatusCompleted
	if rc.c.group == "" {
		tstatus = status
	}
	input, _ := json.Marshal(map[string]string{"api": rc.c.api, "group": rc.c.group})
	return &store.Call{
		Task: &store.Task{ID: rc.task, Pipeline: rc.p.cfg.Name, Status: tstatus, Input: input, Tags: []string{"proxy"}},
		Execution: &store.Execution{Mode: mode, Status: status, Started: rc.start, Ended: end,
			Trace: []string{"call " + rc.hash[:12]}},
	}
}

func (rc *record) failed(ctx context.Context, f *failure, errType, block string) *failure {
	rc.block = block
	f.msg = rc.p.scrub.string(f.msg) // an upstream's error may quote the key
	mode := "live"
	if rc.c.replay || rc.p.cfg.Replay {
		mode = "replay"
	}
	if mode == "replay" && !rc.p.cfg.RecordReplays {
		return f
	}
	end := rc.p.cfg.Store.Now()
	c := rc.newCall(store.StatusFailed, mode, end)
	c.Execution.Error = f.msg
	a := rc.spanAttrs(nil)
	a["error.type"] = store.String(errType)
	c.Spans = []store.Span{{Seq: 1, Name: store.ChatSpanName(rc.c.req.Model), Kind: store.SpanClient, Start: rc.start, End: end,
		Attributes: a, Status: store.SpanStatus{Code: store.CodeError, Message: f.msg}}}
	if rc.write(ctx, c) == nil {
		f.task = rc.task
	}
	return f
}

func (rc *record) answered(ctx context.Context, resp *sdk.ChatResponse, used string, latency time.Duration, created time.Time, recorded bool) (*answer, *failure) {
	st := rc.p.cfg.Store
	rc.block = used
	resp.Text = rc.p.scrub.string(resp.Text)
	model := resp.Model
	if model == "" {
		model = rc.c.req.Model
	}
	cost, priced := rc.p.cfg.Prices.Cost(model, resp.Usage.InputTokens, resp.Usage.OutputTokens)
	if err := run.CheckUsage(used, resp.Usage, cost); err != nil {
		return nil, rc.failed(ctx, &failure{status: http.StatusBadGateway, class: "upstream", code: "impossible_usage", msg: err.Error()}, "sextant.impossible_usage", used)
	}
	mode := "live"
	if recorded {
		mode = "replay"
	}
	if created.IsZero() {
		created = st.Now()
	}
	if recorded && !rc.p.cfg.RecordReplays {
		return &answer{resp: resp, hash: rc.hash, task: rc.task, created: created, recorded: true}, nil
	}
	end := rc.start.Add(latency)
	c := rc.newCall(store.StatusCompleted, mode, end)
	a := rc.spanAttrs(resp)
	a["gen_ai.response.id"] = store.String(responseID(rc.c.api, rc.hash))
	a["gen_ai.output.type"] = store.String(outputType(&rc.c.req))
	a["sextant.recording"] = store.String(rc.hash)
	a["sextant.recorded"] = store.Bool(recorded)
	a["sextant.cost_usd"] = store.Float(cost)
	a["sextant.priced"] = store.Bool(priced)
	a["sextant.latency_ms"] = store.Int(latency.Milliseconds())
	c.Spans = []store.Span{{Seq: 1, Name: store.ChatSpanName(rc.c.req.Model), Kind: store.SpanClient, Start: rc.start, End: end,
		Attributes: a, Status: store.SpanStatus{Code: store.CodeOK}}}
	if recorded {
		c.Replayed = rc.hash
	} else {
		rec, err := store.NewChatRecording(st.Redactor(), used, rc.task, &rc.c.req, resp, latency)
		if err != nil {
			return nil, rc.failed(ctx, &failure{status: http.StatusInternalServerError, class: "internal", code: "record_error", msg: err.Error()}, "sextant.record_error", used)
		}
		rec.Created = created
		c.Recording = rec
	}
	if err := rc.write(ctx, c); err != nil {
		// A recording proxy that cannot record says so rather than
		// answer: a later replay would miss without a trace.
		return nil, &failure{status: http.StatusInternalServerError, class: "internal", code: "record_error",
			msg: fmt.Sprintf("the answer could not be recorded: %v", err)}
	}
	return &answer{resp: resp, hash: rc.hash, task: rc.task, created: created, recorded: recorded}, nil
}

func outputType(r *sdk.ChatRequest) string {
	if r.JSON {
		return "json"
	}
	return "text"
}

// responseID is the answer's id: derived from the request hash, so a
// replayed answer carries the id of the recorded one.
func responseID(api, hash string) string {
	if api == "anthropic" {
		return "msg_" + hash[:24]
	}
	return "chatcmpl-" + hash[:24]
}

// writeHeaders sets the headers every answer (or failure) carries.
func writeHeaders(w http.ResponseWriter, task, hash string, recorded bool) {
	h := w.Header()
	if task != "" {
		h.Set(HeaderTask, task)
	}
	if hash != "" {
		h.Set(HeaderHash, hash)
		h.Set(HeaderRecorded, strconv.FormatBool(recorded))
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"message":"encode response","type":"server_error"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// chunks splits text into stream deltas: one word (with the spaces before
// it) each, so a stream looks like one and is the same on every replay.
func chunks(text string) []string {
	if text == "" {
		return nil
	}
	var out []string
	start := 0
	inWord := false
	for i, r := range text {
		space := r == ' ' || r == '\n' || r == '\t'
		if inWord && space {
			out = append(out, text[start:i])
			start = i
			inWord = false
		} else if !space {
			inWord = true
		}
	}
	return append(out, text[start:])
}

// translatedNote says why a translated call refused a parameter.
func (p *Proxy) translatedNote(block string) string {
	use := "a plugin"
	if p.cfg.Providers != nil {
		if pr, ok := p.cfg.Providers.Get(block); ok && pr.System != "" {
			use = fmt.Sprintf("%q", pr.System)
		}
	}
	return fmt.Sprintf(" (provider block %q uses %s, which the proxy cannot forward requests to as they are: only blocks with use = \"openai\" or \"anthropic\" of the route's API pass every parameter through)", block, use)
}
