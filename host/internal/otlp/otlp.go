// Package otlp receives traces over OTLP/HTTP (POST /v1/traces, protobuf
// or JSON, optionally gzipped) from agents instrumented with any
// OpenTelemetry SDK, and stores their spans as sextant's: one task and
// execution per trace (or per sextant.task attribute), GenAI
// semantic-convention attributes mapped to sextant's usage and cost.
//
// A request is all or nothing: every span is converted and checked before
// anything is written, and a bad payload is a 400 that writes nothing.
// The package serves an HTTP handler only; listening, authentication and
// size limits of the whole server belong to host/serve.
package otlp

import (
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// Route is the path the handler serves.
const Route = "/v1/traces"

// Limits on one request: the body as sent, and (the default of
// Config.MaxDecompressed) once decompressed.
const (
	MaxBody         = 16 << 20
	MaxDecompressed = 16 << 20
)

// DefaultMaxConcurrent is the default of Config.MaxConcurrent.
const DefaultMaxConcurrent = 4

// MaxSpanCostUSD is the largest sextant.cost_usd one span may report. No
// single call costs a million dollars; a span claiming more is broken,
// and summing it would swamp every cost total.
const MaxSpanCostUSD = 1_000_000

// AttrTask, on a span or its resource, names the task the span belongs to
// (a valid task id); without it a trace is its own task. AttrExecution on
// a span names its execution (else its trace id is), AttrSpanSeq its
// sequence number, and AttrPipeline on the resource the task's pipeline
// (else service.name is): sextant's own export, posted back, is the same
// task, execution and spans. The receiver keeps them in the span's place,
// not among its attributes.
const (
	AttrTask      = store.AttrTask
	AttrExecution = store.AttrExecution
	AttrSpanSeq   = store.AttrSpanSeq
	AttrPipeline  = store.AttrPipeline
)

// Config is what the receiver needs.
type Config struct {
	// Store receives the spans. Required.
	Store *store.Store
	// Prices prices GenAI spans; nil means run.DefaultPrices().
	Prices run.Prices
	Logger *slog.Logger
	// MaxDecompressed bounds a request's body once decompressed, in
	// bytes; 0 means MaxDecompressed. A body past it is a 413 naming the
	// limit, found while decompressing: no more than the limit is ever
	// held.
	MaxDecompressed int64
	// MaxConcurrent bounds the requests read, decoded and stored at once
	// (each may hold MaxDecompressed bytes and their decoding); one more
	// is a 503 with Retry-After, its body unread. 0 means
	// DefaultMaxConcurrent.
	MaxConcurrent int
}

// Handler is the OTLP/HTTP trace receiver.
type Handler struct {
	cfg   Config
	log   *slog.Logger
	known sync.Map      // "task\x00exec" → struct{}: executions known to exist
	slots chan struct{} // one per request in progress (Config.MaxConcurrent)
}

var _ http.Handler = (*Handler)(nil)

// NewHandler returns a receiver storing into cfg.Store.
func NewHandler(cfg Config) (*Handler, error) {
	if cfg.Store == nil {
		return nil, errors.New("otlp: no store")
	}
	if cfg.Prices == nil {
		cfg.Prices = run.DefaultPrices()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	switch {
	case cfg.MaxDecompressed < 0:
		return nil, fmt.Errorf("otlp: MaxDecompressed %d is negative", cfg.MaxDecompressed)
	case cfg.MaxDecompressed == 0:
		cfg.MaxDecompressed = MaxDecompressed
	}
	switch {
	case cfg.MaxConcurrent < 0:
		return nil, fmt.Errorf("otlp: MaxConcurrent %d is negative", cfg.MaxConcurrent)
	case cfg.MaxConcurrent == 0:
		cfg.MaxConcurrent = DefaultMaxConcurrent
	}
	return &Handler{cfg: cfg, log: cfg.Logger.With("component", "otlp"), slots: make(chan struct{}, cfg.MaxConcurrent)}, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		httpError(w, false, http.StatusMethodNotAllowed, "%s %s: only POST is served", r.Method, r.URL.Path)
		return
	}
	ct := strings.ToLower(strings.TrimSpace(strings.Split(r.Header.Get("Content-Type"), ";")[0]))
	var isJSON bool
	switch ct {
	case "application/x-protobuf", "application/protobuf":
	case "application/json":
		isJSON = true
	default:
		httpError(w, false, http.StatusUnsupportedMediaType, "content type %q: want application/x-protobuf or application/json", ct)
		return
	}
	// Memory is what a flood of large or compressed bodies would take:
	// a request takes a slot before its body is read, or is refused at
	// once, as the proxy refuses a call past its decode budget: a request
	// left waiting would hear its 503 only once its client gave up, and
	// OTLP exporters retry a 503 after its Retry-After.
	select {
	case h.slots <- struct{}{}:
		defer func() { <-h.slots }()
	default:
		w.Header().Set("Retry-After", "1")
		httpError(w, isJSON, http.StatusServiceUnavailable,
			"the receiver is reading as many requests as it may at once (%d): send this one again shortly", cap(h.slots))
		return
	}
	body, status, err := h.readBody(w, r)
	if err != nil {
		httpError(w, isJSON, status, "%v", err)
		return
	}
	req := &coltracepb.ExportTraceServiceRequest{}
	if isJSON {
		err = unmarshalJSON(body, req)
	} else {
		err = proto.Unmarshal(body, req)
	}
	if err != nil {
		httpError(w, isJSON, http.StatusBadRequest, "decode traces: %v", err)
		return
	}
	n, err := h.Store(r.Context(), req)
	if err != nil {
		var bad *badPayload
		if errors.As(err, &bad) {
			httpError(w, isJSON, http.StatusBadRequest, "%v", err)
			return
		}
		h.log.Error("store spans", "err", err)
		httpError(w, isJSON, http.StatusInternalServerError, "store spans: %v", err)
		return
	}
	h.log.Debug("received spans", "spans", n)
	if isJSON {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("{}"))
		return
	}
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// readBody reads the body, decompressing it, into at most
// Config.MaxDecompressed bytes.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, int, error) {
	limit := h.cfg.MaxDecompressed
	var src io.Reader = http.MaxBytesReader(w, r.Body, MaxBody)
	what := "body"
	switch enc := strings.ToLower(r.Header.Get("Content-Encoding")); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(src)
		if err != nil {
			return nil, http.StatusBadRequest, fmt.Errorf("gzip body: %w", err)
		}
		defer zr.Close()
		src = zr
		what = "decompressed body"
	default:
		return nil, http.StatusUnsupportedMediaType, fmt.Errorf("content encoding %q: want gzip or none", enc)
	}
	b, err := readAtMost(src, limit)
	if err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("request body is larger than %d bytes", MaxBody)
		case errors.Is(err, errTooLarge):
			return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("%s is larger than %d bytes, the limit of one OTLP request: send smaller batches", what, limit)
		}
		return nil, http.StatusBadRequest, fmt.Errorf("read body: %w", err)
	}
	return b, 0, nil
}

var errTooLarge = errors.New("too large")

// chunkSize is the unit bodies are read in (chunkPool).
const chunkSize = 1 << 20

// chunkPool recycles the chunks bodies are read into: a flood of bombs,
// each read to the limit and dropped, reuses the same few chunks instead
// of leaving garbage for the collector, and the pool empties itself when
// the flood is over.
var chunkPool = sync.Pool{New: func() any {
	b := make([]byte, chunkSize)
	return &b
}}

// readAtMost reads r to its end, failing with errTooLarge as soon as it
// has more than limit bytes: no more than limit plus one chunk is held.
func readAtMost(r io.Reader, limit int64) ([]byte, error) {
	type part struct {
		buf *[]byte
		n   int
	}
	var parts []part
	defer func() {
		for _, p := range parts {
			chunkPool.Put(p.buf)
		}
	}()
	var total int64
	for {
		buf := chunkPool.Get().(*[]byte)
		n, err := io.ReadFull(r, *buf)
		parts = append(parts, part{buf, n})
		total += int64(n)
		if total > limit {
			return nil, errTooLarge
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	out := make([]byte, 0, total)
	for _, p := range parts {
		out = append(out, (*p.buf)[:p.n]...)
	}
	return out, nil
}

// httpError answers with an OTLP Status message (google.rpc.Status), as
// protobuf or JSON.
func httpError(w http.ResponseWriter, isJSON bool, status int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if isJSON {
		b, _ := json.Marshal(map[string]any{"code": status, "message": msg})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(b)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(msg + "\n"))
}

// unmarshalJSON decodes OTLP/JSON, whose trace and span ids are hex
// strings where protojson expects base64: they are rewritten first.
func unmarshalJSON(b []byte, req *coltracepb.ExportTraceServiceRequest) error {
	fixed, err := rewriteIDs(b)
	if err != nil {
		return err
	}
	return protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(fixed, req)
}

// rewriteIDs returns b with the hex string value of every traceId, spanId
// and parentSpanId key (a span's, a link's) as base64, in one pass over
// the bytes: a document decoded into maps to do it took some sixty times
// its size in memory and seconds of CPU, a cheap flood for a client. A
// document that is not JSON is returned as it is, for protojson to
// refuse.
func rewriteIDs(b []byte) ([]byte, error) {
	var out []byte // nil until the first rewrite
	last := 0
	for i := 0; i < len(b); i++ {
		if b[i] != '"' {
			continue
		}
		end := stringEnd(b, i)
		if end < 0 {
			return b, nil
		}
		key := b[i+1 : end]
		i = end
		if k := string(key); k != "traceId" && k != "spanId" && k != "parentSpanId" {
			continue
		}
		j := skipSpace(b, end+1)
		if j >= len(b) || b[j] != ':' {
			continue // a string value, not a key
		}
		if j = skipSpace(b, j+1); j >= len(b) || b[j] != '"' {
			continue
		}
		vend := stringEnd(b, j)
		if vend < 0 {
			return b, nil
		}
		i = vend
		val := b[j+1 : vend]
		if len(val) == 0 {
			continue
		}
		raw := make([]byte, hex.DecodedLen(len(val)))
		if _, err := hex.Decode(raw, val); err != nil {
			return nil, fmt.Errorf("%s %q is not hex", key, val)
		}
		out = append(out, b[last:j+1]...)
		out = base64.StdEncoding.AppendEncode(out, raw)
		last = vend
	}
	if out == nil {
		return b, nil
	}
	return append(out, b[last:]...), nil
}

// stringEnd is the index of the quote that ends the JSON string starting
// at b[i], or -1 when it never ends.
func stringEnd(b []byte, i int) int {
	for k := i + 1; k < len(b); k++ {
		switch b[k] {
		case '\\':
			k++
		case '"':
			return k
		}
	}
	return -1
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// badPayload is a request the receiver refuses (400).
type badPayload struct{ msg string }

func (e *badPayload) Error() string { return e.msg }

// execKey identifies one execution the spans go to.
type execKey struct{ task, exec string }

// Store converts every span of req, then stores them; nothing is stored
// when any span is bad. It returns how many spans were stored.
func (h *Handler) Store(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (int, error) {
	var spans []store.Span
	var rewards []*store.Reward
	type execInfo struct {
		pipeline, trace string
		start, end      time.Time
	}
	execs := map[execKey]*execInfo{}
	var order []execKey
	for i, rs := range req.GetResourceSpans() {
		res := attrs(rs.GetResource().GetAttributes())
		service := "otlp"
		if v, ok := res["service.name"]; ok && v.Str() != "" {
			service = v.Str()
		}
		pipeline := service
		if v, ok := res[AttrPipeline]; ok && v.Str() != "" {
			pipeline = v.Str()
		}
		for j, ss := range rs.GetScopeSpans() {
			for k, sp := range ss.GetSpans() {
				where := fmt.Sprintf("resourceSpans[%d].scopeSpans[%d].spans[%d]", i, j, k)
				out, err := h.convert(sp, res, service)
				if err == nil {
					err = spanRewards(&out, &rewards)
				}
				if err != nil {
					return 0, &badPayload{msg: where + ": " + err.Error()}
				}
				key := execKey{task: out.Task, exec: out.Execution}
				info := execs[key]
				if info == nil {
					info = &execInfo{pipeline: pipeline, trace: out.TraceID, start: out.Start, end: out.End}
					execs[key] = info
					order = append(order, key)
				}
				if out.Start.Before(info.start) {
					info.start = out.Start
				}
				if out.End.After(info.end) {
					info.end = out.End
				}
				spans = append(spans, out)
			}
		}
	}
	if len(spans) == 0 {
		return 0, nil
	}
	st := h.cfg.Store
	for _, key := range order {
		id := key.task + "\x00" + key.exec
		if _, ok := h.known.Load(id); ok {
			continue
		}
		info := execs[key]
		input, _ := json.Marshal(map[string]string{"source": "otlp"})
		err := st.CreateTask(ctx, &store.Task{ID: key.task, Pipeline: info.pipeline, Status: store.StatusCompleted,
			Created: info.start, Input: input, Tags: []string{"otlp"}})
		if err != nil && !errors.Is(err, store.ErrExists) {
			return 0, err
		}
		err = st.CreateExecution(ctx, &store.Execution{Task: key.task, ID: key.exec, TraceID: info.trace, Mode: "live",
			Status: store.StatusCompleted, Started: info.start, Ended: info.end})
		if err != nil && !errors.Is(err, store.ErrExists) {
			return 0, err
		}
		h.known.Store(id, struct{}{})
	}
	if err := st.AppendSpans(ctx, spans); err != nil {
		return 0, err
	}
	if len(rewards) > 0 {
		if err := st.AddRewards(ctx, rewards); err != nil {
			return 0, err
		}
	}
	return len(spans), nil
}

// AttrReward on a span is a reward on its task, aimed at the span, from
// -1 (bad) to 1 (good): AttrReward itself the unnamed dimension,
// AttrReward+".NAME" the dimension NAME (sextant feedback --reward
// NAME=X). The attributes stay on the span as sent.
const AttrReward = "sextant.reward"

// spanRewards appends the rewards sp's attributes carry, checked.
func spanRewards(sp *store.Span, out *[]*store.Reward) error {
	for _, k := range slices.Sorted(maps.Keys(sp.Attributes)) {
		dim, ok := strings.CutPrefix(k, AttrReward)
		if !ok || (dim != "" && dim[0] != '.') {
			continue
		}
		dim = strings.TrimPrefix(dim, ".")
		if k != AttrReward {
			if err := store.ValidDimension(dim); err != nil {
				return fmt.Errorf("attribute %s: %w", k, err)
			}
		}
		v := sp.Attributes[k]
		var f float64
		switch v.Kind() {
		case store.KindFloat:
			f = v.Float()
		case store.KindInt:
			f = float64(v.Int())
		default:
			return fmt.Errorf("attribute %s: want a number from -1 to 1", k)
		}
		if !(f >= -1 && f <= 1) { // NaN too
			return fmt.Errorf("attribute %s: %v is out of range: want -1 (bad) to 1 (good)", k, f)
		}
		*out = append(*out, &store.Reward{Task: sp.Task, SpanID: sp.SpanID, Dimension: dim, Value: f, Created: sp.End})
	}
	return nil
}

var kinds = map[tracepb.Span_SpanKind]store.SpanKind{
	tracepb.Span_SPAN_KIND_UNSPECIFIED: store.SpanInternal,
	tracepb.Span_SPAN_KIND_INTERNAL:    store.SpanInternal,
	tracepb.Span_SPAN_KIND_SERVER:      store.SpanServer,
	tracepb.Span_SPAN_KIND_CLIENT:      store.SpanClient,
	tracepb.Span_SPAN_KIND_PRODUCER:    store.SpanProducer,
	tracepb.Span_SPAN_KIND_CONSUMER:    store.SpanConsumer,
}

// convert checks one OTLP span and makes it a sextant span.
func (h *Handler) convert(sp *tracepb.Span, res store.Attributes, service string) (store.Span, error) {
	var out store.Span
	trace, err := id(sp.GetTraceId(), 16, "trace id")
	if err != nil {
		return out, err
	}
	sid, err := id(sp.GetSpanId(), 8, "span id")
	if err != nil {
		return out, err
	}
	var parent string
	if len(sp.GetParentSpanId()) > 0 {
		if parent, err = id(sp.GetParentSpanId(), 8, "parent span id"); err != nil {
			return out, err
		}
	}
	if sp.GetName() == "" {
		return out, errors.New("name is empty")
	}
	kind, ok := kinds[sp.GetKind()]
	if !ok {
		return out, fmt.Errorf("unknown kind %d", sp.GetKind())
	}
	if sp.GetStartTimeUnixNano() == 0 {
		return out, errors.New("start time is missing")
	}
	start, end := nanos(sp.GetStartTimeUnixNano()), nanos(sp.GetEndTimeUnixNano())
	if sp.GetEndTimeUnixNano() == 0 {
		end = start
	}
	if end.Before(start) {
		return out, errors.New("ends before it starts")
	}
	a := attrs(sp.GetAttributes())
	if len(a) == 0 {
		a = store.Attributes{}
	}
	task, named := "otel-"+trace, false
	for _, src := range []store.Attributes{a, res} {
		if v, ok := src[AttrTask]; ok && v.Str() != "" {
			if !validID(v.Str()) {
				return out, fmt.Errorf("attribute %s %q is not a task id (letters, digits, ._:+- and at most 128)", AttrTask, v.Str())
			}
			task, named = v.Str(), true
			break
		}
	}
	exec := trace
	if v, ok := a[AttrExecution]; ok {
		if !validID(v.Str()) {
			return out, fmt.Errorf("attribute %s %q is not an execution id (letters, digits, ._:+- and at most 128)", AttrExecution, v.Str())
		}
		exec = v.Str()
	}
	var seq uint64
	if v, ok := a[AttrSpanSeq]; ok {
		if v.Kind() != store.KindInt || v.Int() < 1 || v.Int() > math.MaxInt32 {
			return out, fmt.Errorf("attribute %s: want a positive integer", AttrSpanSeq)
		}
		seq = uint64(v.Int())
	}
	// The identity is the span's place in the store, not an attribute.
	delete(a, AttrTask)
	delete(a, AttrExecution)
	delete(a, AttrSpanSeq)
	// A span of sextant's own (it names its task, from service sextant)
	// keeps its attributes as they were; another service's is marked.
	if _, ok := a["service.name"]; !ok && !(named && service == "sextant") {
		a["service.name"] = store.String(service)
	}
	if err := h.genAI(a); err != nil {
		return out, err
	}
	out = store.Span{Task: task, Execution: exec, Seq: seq, TraceID: trace, SpanID: sid, ParentSpanID: parent,
		Name: sp.GetName(), Kind: kind, Start: start, End: end, Attributes: a}
	switch sp.GetStatus().GetCode() {
	case tracepb.Status_STATUS_CODE_OK:
		out.Status.Code = store.CodeOK
	case tracepb.Status_STATUS_CODE_ERROR:
		out.Status.Code = store.CodeError
	default:
		out.Status.Code = store.CodeUnset
	}
	out.Status.Message = sp.GetStatus().GetMessage()
	for n, l := range sp.GetLinks() {
		lt, err := id(l.GetTraceId(), 16, fmt.Sprintf("links[%d] trace id", n))
		if err != nil {
			return out, err
		}
		ls, err := id(l.GetSpanId(), 8, fmt.Sprintf("links[%d] span id", n))
		if err != nil {
			return out, err
		}
		out.Links = append(out.Links, store.Link{TraceID: lt, SpanID: ls, Attributes: attrs(l.GetAttributes())})
	}
	return out, nil
}

// genAI checks and maps GenAI semantic-convention attributes to
// sextant's: the deprecated names to the current ones, and a cost from the
// price table when the span reports token usage and no cost. Token counts
// and the cost must be ones a call can have, as a provider's usage must
// (run.CheckUsage): a negative count or cost would switch off every total
// and limit that sums them.
func (h *Handler) genAI(a store.Attributes) error {
	if err := checkUsage(a); err != nil {
		return err
	}
	rename := func(old, cur string) {
		if v, ok := a[old]; ok {
			if _, has := a[cur]; !has {
				a[cur] = v
			}
		}
	}
	rename(store.AttrGenAISystem, store.AttrGenAIProviderName)
	rename("gen_ai.usage.prompt_tokens", store.AttrGenAIUsageInputTokens)
	rename("gen_ai.usage.completion_tokens", store.AttrGenAIUsageOutputTokens)
	in, hasIn := a[store.AttrGenAIUsageInputTokens]
	outT, hasOut := a[store.AttrGenAIUsageOutputTokens]
	if !hasIn && !hasOut {
		return nil
	}
	if _, ok := a[AttrCost]; ok {
		return nil
	}
	model := a[store.AttrGenAIResponseModel].Str()
	if model == "" {
		model = a[store.AttrGenAIRequestModel].Str()
	}
	if cost, ok := h.cfg.Prices.Cost(model, int(in.Int()), int(outT.Int())); ok {
		a[AttrCost] = store.Float(cost)
	}
	return nil
}

// AttrCost is the attribute holding a span's cost in US dollars.
const AttrCost = "sextant.cost_usd"

// checkUsage checks the span's token counts (every gen_ai.usage.*tokens
// attribute) and cost, in key order so that the error is stable. A count
// sent as a whole double is stored as an integer.
func checkUsage(a store.Attributes) error {
	keys := make([]string, 0, 4)
	for k := range a {
		if strings.HasPrefix(k, "gen_ai.usage.") && strings.HasSuffix(k, "tokens") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := a[k]
		var n int64
		switch v.Kind() {
		case store.KindInt:
			n = v.Int()
		case store.KindFloat:
			f := v.Float()
			if f != math.Trunc(f) || f < math.MinInt64 || f > math.MaxInt64 {
				return fmt.Errorf("attribute %s: %v is not a whole number of tokens", k, f)
			}
			n = int64(f)
			a[k] = store.Int(n)
		default:
			return fmt.Errorf("attribute %s: %s is not a number of tokens", k, show(v))
		}
		switch {
		case n < 0:
			return fmt.Errorf("attribute %s: %d is negative (want 0..%d tokens)", k, n, run.MaxCallTokens)
		case n > run.MaxCallTokens:
			return fmt.Errorf("attribute %s: %d is more than one call can use (want 0..%d tokens)", k, n, run.MaxCallTokens)
		}
	}
	if v, ok := a[AttrCost]; ok {
		if k := v.Kind(); k != store.KindFloat && k != store.KindInt {
			return fmt.Errorf("attribute %s: %s is not an amount of US dollars", AttrCost, show(v))
		}
		switch c := v.Float(); {
		case c < 0:
			return fmt.Errorf("attribute %s: %v is negative (want 0..%d US dollars)", AttrCost, c, MaxSpanCostUSD)
		case c > MaxSpanCostUSD:
			return fmt.Errorf("attribute %s: %v is more than one call can cost (want 0..%d US dollars)", AttrCost, c, MaxSpanCostUSD)
		}
	}
	return nil
}

// show renders an attribute value for an error, as JSON.
func show(v store.Value) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func nanos(n uint64) time.Time {
	if n > math.MaxInt64 {
		n = math.MaxInt64
	}
	return time.Unix(0, int64(n)).UTC()
}

// id checks a trace or span id: n bytes, not all zero.
func id(b []byte, n int, what string) (string, error) {
	if len(b) != n {
		return "", fmt.Errorf("%s has %d bytes, want %d", what, len(b), n)
	}
	for _, c := range b {
		if c != 0 {
			return hex.EncodeToString(b), nil
		}
	}
	return "", fmt.Errorf("%s is all zeros", what)
}

func validID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			i > 0 && (c == '.' || c == '_' || c == ':' || c == '+' || c == '-')) {
			return false
		}
	}
	return true
}

// attrs converts OTLP attributes. Scalars and string arrays keep their
// type; other arrays, key-value lists and bytes are stored as JSON text.
// Non-finite doubles are dropped (the store refuses them).
func attrs(kvs []*commonpb.KeyValue) store.Attributes {
	if len(kvs) == 0 {
		return nil
	}
	out := make(store.Attributes, len(kvs))
	for _, kv := range kvs {
		if kv.GetKey() == "" || kv.GetValue() == nil {
			continue
		}
		if v, ok := value(kv.GetValue()); ok {
			out[kv.GetKey()] = v
		}
	}
	return out
}

func value(v *commonpb.AnyValue) (store.Value, bool) {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return store.String(x.StringValue), true
	case *commonpb.AnyValue_BoolValue:
		return store.Bool(x.BoolValue), true
	case *commonpb.AnyValue_IntValue:
		return store.Int(x.IntValue), true
	case *commonpb.AnyValue_DoubleValue:
		if math.IsNaN(x.DoubleValue) || math.IsInf(x.DoubleValue, 0) {
			return store.Value{}, false
		}
		return store.Float(x.DoubleValue), true
	case *commonpb.AnyValue_ArrayValue:
		ss := make([]string, 0, len(x.ArrayValue.GetValues()))
		for _, el := range x.ArrayValue.GetValues() {
			s, ok := el.GetValue().(*commonpb.AnyValue_StringValue)
			if !ok {
				return store.String(plain(v)), true
			}
			ss = append(ss, s.StringValue)
		}
		return store.Strings(ss...), true
	case *commonpb.AnyValue_KvlistValue, *commonpb.AnyValue_BytesValue:
		return store.String(plain(v)), true
	}
	return store.Value{}, false
}

// plain renders a structured value as JSON text.
func plain(v *commonpb.AnyValue) string {
	b, err := json.Marshal(toAny(v))
	if err != nil {
		return ""
	}
	return string(b)
}

func toAny(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		if math.IsNaN(x.DoubleValue) || math.IsInf(x.DoubleValue, 0) {
			return nil
		}
		return x.DoubleValue
	case *commonpb.AnyValue_BytesValue:
		return base64.StdEncoding.EncodeToString(x.BytesValue)
	case *commonpb.AnyValue_ArrayValue:
		out := make([]any, 0, len(x.ArrayValue.GetValues()))
		for _, el := range x.ArrayValue.GetValues() {
			out = append(out, toAny(el))
		}
		return out
	case *commonpb.AnyValue_KvlistValue:
		out := map[string]any{}
		for _, kv := range x.KvlistValue.GetValues() {
			out[kv.GetKey()] = toAny(kv.GetValue())
		}
		return out
	}
	return nil
}
