// Package telemetry exports sextant's spans live, as they are committed,
// to an OpenTelemetry collector (Jaeger, Tempo, Honeycomb, any OTLP/HTTP
// endpoint) with the OpenTelemetry Go SDK's OTLP/HTTP exporter.
//
// The store stays the record: export is best effort, off the run's path
// (a bounded queue; a full queue drops spans and says so), and never
// fails a run. Prompt and response content is exported only when asked
// for, redacted as the store redacts.
package telemetry

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// The environment variables telemetry reads: the exporter's standard
// ones, and the GenAI instrumentations' content switch.
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvCaptureContent = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
)

// Recordings reads the recording a provider call's span names
// (sextant.recording), for its prompt and response. *store.Store is one.
type Recordings interface {
	Recording(ctx context.Context, key string) (*store.Recording, error)
}

// Config says where and what to export.
type Config struct {
	// Endpoint is the OTLP/HTTP traces URL ("http://host:4318/v1/traces"),
	// or a base URL to which /v1/traces is appended. "" reads
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, then OTEL_EXPORTER_OTLP_ENDPOINT.
	Endpoint string
	// Service is the service.name resource attribute; "" means "sextant".
	Service string
	// Content exports prompts and responses (gen_ai.input.messages,
	// gen_ai.output.messages) read from Recordings, redacted with
	// Redactor. Off by default; CaptureContentFromEnv reads the switch.
	Content    bool
	Recordings Recordings
	Redactor   *store.Redactor
	Logger     *slog.Logger
	// Queue is how many span batches may wait for export; 0 means 1024.
	Queue int
}

// EndpointFromEnv returns the traces endpoint the environment names, or "".
func EndpointFromEnv() string {
	if v := os.Getenv(EnvTracesEndpoint); v != "" {
		return v
	}
	if v := os.Getenv(EnvEndpoint); v != "" {
		return strings.TrimSuffix(v, "/") + "/v1/traces"
	}
	return ""
}

// CaptureContentFromEnv reports whether the environment asks for
// prompt and response content (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true).
func CaptureContentFromEnv() bool {
	v, _ := strconv.ParseBool(os.Getenv(EnvCaptureContent))
	return v
}

// Exporter sends spans to the endpoint in the background.
type Exporter struct {
	cfg   Config
	exp   *otlptrace.Exporter
	res   *resource.Resource
	log   *slog.Logger
	queue chan []store.Span
	done  chan struct{}

	mu      sync.Mutex
	closed  bool
	dropped int
}

// New starts an exporter, or returns nil and no error when no endpoint is
// configured (telemetry is off).
func New(ctx context.Context, cfg Config) (*Exporter, error) {
	if cfg.Endpoint == "" {
		cfg.Endpoint = EndpointFromEnv()
	}
	if cfg.Endpoint == "" {
		return nil, nil
	}
	if !strings.Contains(strings.TrimPrefix(strings.TrimPrefix(cfg.Endpoint, "http://"), "https://"), "/") {
		cfg.Endpoint = strings.TrimSuffix(cfg.Endpoint, "/") + "/v1/traces"
	}
	if cfg.Service == "" {
		cfg.Service = "sextant"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Queue <= 0 {
		cfg.Queue = 1024
	}
	if cfg.Redactor == nil {
		cfg.Redactor = store.DefaultRedactor()
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(cfg.Endpoint))
	if err != nil {
		return nil, fmt.Errorf("telemetry: exporter for %s: %w", cfg.Endpoint, err)
	}
	x := &Exporter{cfg: cfg, exp: exp, log: cfg.Logger.With("component", "telemetry"),
		res:   resource.NewSchemaless(attribute.String("service.name", cfg.Service)),
		queue: make(chan []store.Span, cfg.Queue), done: make(chan struct{})}
	go x.loop()
	return x, nil
}

// Spans queues spans for export without blocking; when the queue is full
// they are dropped (counted, and logged at Shutdown). Safe on a nil
// Exporter (telemetry off).
func (x *Exporter) Spans(spans []store.Span) {
	if x == nil || len(spans) == 0 {
		return
	}
	cp := make([]store.Span, len(spans))
	copy(cp, spans)
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return
	}
	select {
	case x.queue <- cp:
	default:
		x.dropped += len(spans)
	}
}

// Shutdown exports what is queued, then stops. Safe on a nil Exporter.
func (x *Exporter) Shutdown(ctx context.Context) error {
	if x == nil {
		return nil
	}
	x.mu.Lock()
	if !x.closed {
		x.closed = true
		close(x.queue)
	}
	dropped := x.dropped
	x.mu.Unlock()
	select {
	case <-x.done:
	case <-ctx.Done():
	}
	if dropped > 0 {
		x.log.Warn("telemetry queue full; spans not exported", "dropped", dropped)
	}
	return x.exp.Shutdown(ctx)
}

func (x *Exporter) loop() {
	defer close(x.done)
	for batch := range x.queue {
		// Take what else is waiting, up to a batch the collector likes.
		for len(batch) < 512 {
			more, ok := <-x.queueOrNil()
			if !ok {
				break
			}
			batch = append(batch, more...)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := x.exp.ExportSpans(ctx, x.convert(ctx, batch)); err != nil {
			x.log.Warn("telemetry export failed", "spans", len(batch), "err", err)
		}
		cancel()
	}
}

// queueOrNil returns the queue when a batch is waiting, else a closed
// channel, so loop takes only what is there.
func (x *Exporter) queueOrNil() <-chan []store.Span {
	if len(x.queue) > 0 {
		return x.queue
	}
	return closedChan
}

var closedChan = func() chan []store.Span { c := make(chan []store.Span); close(c); return c }()

var scope = instrumentation.Scope{Name: "github.com/sextant-dev/sextant"}

func (x *Exporter) convert(ctx context.Context, spans []store.Span) []sdktrace.ReadOnlySpan {
	stubs := make(tracetest.SpanStubs, 0, len(spans))
	for i := range spans {
		sp := &spans[i]
		sc, err := spanContext(sp.TraceID, sp.SpanID)
		if err != nil {
			x.log.Debug("telemetry: span skipped", "span", sp.Name, "err", err)
			continue
		}
		stub := tracetest.SpanStub{Name: sp.Name, SpanContext: sc, SpanKind: kind(sp.Kind),
			StartTime: sp.Start, EndTime: sp.End, Resource: x.res, InstrumentationScope: scope}
		if sp.ParentSpanID != "" {
			if p, err := spanContext(sp.TraceID, sp.ParentSpanID); err == nil {
				stub.Parent = p
			}
		}
		// The identity attributes are set over stored ones of the same
		// name (a run's root span stores its task): one key, one value.
		stub.Attributes = attributes(store.IdentityAttributes(sp), x.cfg.Content)
		_, has := sp.LookupAttr(store.AttrGenAIInputMessages)
		if x.cfg.Content && !has {
			stub.Attributes = append(stub.Attributes, x.content(ctx, sp)...)
		}
		switch sp.Status.Code {
		case store.CodeOK:
			stub.Status = sdktrace.Status{Code: codes.Ok}
		case store.CodeError:
			stub.Status = sdktrace.Status{Code: codes.Error, Description: sp.Status.Message}
		}
		for _, l := range sp.Links {
			if lc, err := spanContext(l.TraceID, l.SpanID); err == nil {
				stub.Links = append(stub.Links, sdktrace.Link{SpanContext: lc, Attributes: attributes(l.Attributes, x.cfg.Content)})
			}
		}
		stubs = append(stubs, stub)
	}
	return stubs.Snapshots()
}

// content returns the prompt and response of a provider call's span, in
// the GenAI conventions' message shape, redacted.
func (x *Exporter) content(ctx context.Context, sp *store.Span) []attribute.KeyValue {
	key := sp.Attr("sextant.recording").Str()
	if key == "" || x.cfg.Recordings == nil {
		return nil
	}
	rec, err := x.cfg.Recordings.Recording(ctx, key)
	if err != nil {
		return nil
	}
	type part struct {
		Type    string `json:"type"`
		Content string `json:"content"`
	}
	type message struct {
		Role         string `json:"role"`
		Parts        []part `json:"parts"`
		FinishReason string `json:"finish_reason,omitempty"`
	}
	var out []attribute.KeyValue
	var req sdk.ChatRequest
	if json.Unmarshal(rec.Request, &req) == nil {
		msgs := make([]message, 0, len(req.Messages))
		for _, m := range req.Messages {
			msgs = append(msgs, message{Role: m.Role, Parts: []part{{Type: "text", Content: m.Content}}})
		}
		if v, ok := x.redacted(msgs); ok {
			out = append(out, attribute.String(store.AttrGenAIInputMessages, v))
		}
	}
	var resp sdk.ChatResponse
	if json.Unmarshal(rec.Response, &resp) == nil {
		msgs := []message{{Role: "assistant", Parts: []part{{Type: "text", Content: resp.Text}}, FinishReason: resp.FinishReason}}
		if v, ok := x.redacted(msgs); ok {
			out = append(out, attribute.String(store.AttrGenAIOutputMessages, v))
		}
	}
	return out
}

func (x *Exporter) redacted(v any) (string, bool) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", false
	}
	return string(x.cfg.Redactor.Redact(b)), true
}

func spanContext(traceID, spanID string) (trace.SpanContext, error) {
	var tid trace.TraceID
	var sid trace.SpanID
	if b, err := hex.DecodeString(traceID); err != nil || len(b) != len(tid) {
		return trace.SpanContext{}, errors.New("bad trace id")
	} else {
		copy(tid[:], b)
	}
	if b, err := hex.DecodeString(spanID); err != nil || len(b) != len(sid) {
		return trace.SpanContext{}, errors.New("bad span id")
	} else {
		copy(sid[:], b)
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}), nil
}

func kind(k store.SpanKind) trace.SpanKind {
	switch k {
	case store.SpanServer:
		return trace.SpanKindServer
	case store.SpanClient:
		return trace.SpanKindClient
	case store.SpanProducer:
		return trace.SpanKindProducer
	case store.SpanConsumer:
		return trace.SpanKindConsumer
	}
	return trace.SpanKindInternal
}

// attributes converts a span's attributes; the messages a span holds
// (the recording proxy's spans carry them) only with content, which is
// opt-in under the GenAI conventions.
func attributes(a store.Attributes, content bool) []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, len(a)+2)
	for k, v := range a {
		if !content && (k == store.AttrGenAIInputMessages || k == store.AttrGenAIOutputMessages) {
			continue
		}
		switch v.Kind() {
		case store.KindString:
			out = append(out, attribute.String(k, v.Str()))
		case store.KindInt:
			out = append(out, attribute.Int64(k, v.Int()))
		case store.KindFloat:
			out = append(out, attribute.Float64(k, v.Float()))
		case store.KindBool:
			out = append(out, attribute.Bool(k, v.Bool()))
		case store.KindStrings:
			out = append(out, attribute.StringSlice(k, v.List()))
		}
	}
	return out
}
