package otlp_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/sextant-dev/sextant/host/internal/otlp"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// zeros reads as many zero bytes as asked.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// bomb is n bytes of zeros, gzipped: about n/1000 bytes on the wire.
func bomb(t testing.TB, n int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(zw, io.LimitReader(zeros{}, n)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// heapPeak samples the bytes of heap in use (objects, live or not yet
// swept, and the spans' unused part) until stop is called, and returns
// the largest sample.
func heapPeak() (stop func() uint64) {
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(200 * time.Microsecond)
		defer tick.Stop()
		for {
			metrics.Read(samples)
			if v := samples[0].Value.Uint64() + samples[1].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak.Load()
	}
}

// TestGzipBombsBounded: 24 clients at once each send a 60 KiB gzip body
// that unpacks to 60 MiB. Each is refused with a 413 naming the limit (or,
// finding every slot held, a 503 with Retry-After),
// and the heap grows by less than 256 MiB meanwhile: decompression stops
// at the limit (16 MiB) and at most MaxConcurrent bodies are read at once.
// Unbounded, the bodies alone would take 24 × 60 MiB.
func TestGzipBombsBounded(t *testing.T) {
	const clients, unpacked, budget = 24, 60 << 20, 256 << 20
	st, srv := receiver(t)
	body := bomb(t, unpacked)
	if len(body) > 100<<10 {
		t.Fatalf("the bomb is %d bytes on the wire", len(body))
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	stop := heapPeak()
	var wg sync.WaitGroup
	var limited atomic.Int64
	errs := make(chan error, clients)
	for range clients {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", srv.URL+otlp.Route, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/x-protobuf")
			req.Header.Set("Content-Encoding", "gzip")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errs <- err
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "1" {
				return // every slot held: refused unread
			}
			limited.Add(1)
			want := fmt.Sprintf("decompressed body is larger than %d bytes, the limit of one OTLP request", otlp.MaxDecompressed)
			if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), want) {
				errs <- fmt.Errorf("status %d %q, want 413 saying %q (or 503 with Retry-After 1)", resp.StatusCode, b, want)
			}
		})
	}
	wg.Wait()
	peak := stop()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if limited.Load() == 0 {
		t.Error("no bomb was read to the limit: each found every slot held")
	}
	base := before.HeapInuse
	t.Logf("heap in use: %d MiB before, peak %d MiB", base>>20, peak>>20)
	if peak > base && peak-base > budget {
		t.Errorf("heap grew by %d MiB during %d concurrent bombs, budget %d MiB", (peak-base)>>20, clients, budget>>20)
	}
	if ts, _ := st.Tasks(context.Background(), store.Query{}); len(ts) != 0 {
		t.Errorf("bombs wrote %d tasks", len(ts))
	}
}

// TestDecompressedLimit: a gzip body that unpacks to just the limit is
// read; one byte more is a 413 naming the limit set in the Config.
func TestDecompressedLimit(t *testing.T) {
	st, err := store.Open(context.Background(), t.TempDir(), store.NewConfig().WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	span := request(&tracepb.Span{TraceId: bytes.Repeat([]byte{1}, 16), SpanId: bytes.Repeat([]byte{2}, 8), Name: "x", StartTimeUnixNano: 1})
	pb, err := proto.Marshal(span)
	if err != nil {
		t.Fatal(err)
	}
	h, err := otlp.NewHandler(otlp.Config{Store: st, Logger: quiet(), MaxDecompressed: int64(len(pb)), MaxConcurrent: 1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	post := func(b []byte) (int, string) {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(b)
		zw.Close()
		req, _ := http.NewRequest("POST", srv.URL, &buf)
		req.Header.Set("Content-Type", "application/x-protobuf")
		req.Header.Set("Content-Encoding", "gzip")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	if code, out := post(pb); code != 200 {
		t.Fatalf("a body of just the limit: %d %s", code, out)
	}
	code, out := post(append(pb, 0))
	if want := fmt.Sprintf("decompressed body is larger than %d bytes", len(pb)); code != 413 || !strings.Contains(out, want) {
		t.Fatalf("a body one byte over: %d %s, want 413 saying %q", code, out, want)
	}
	if _, err := otlp.NewHandler(otlp.Config{Store: st, MaxDecompressed: -1}); err == nil {
		t.Error("a negative MaxDecompressed is accepted")
	}
}

// request wraps spans into an export request.
func request(spans ...*tracepb.Span) *coltracepb.ExportTraceServiceRequest {
	return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}}}}}
}

func intAttr(k string, v int64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
}

func doubleAttr(k string, v float64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v}}}
}

func stringAttr(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// TestUsageChecked: token counts and costs no call can have are a 400
// naming the attribute, and nothing of the request is stored (a negative
// count would subtract from every token total, a negative cost switch
// off cost limits); good ones pass, a whole double stored as an integer.
func TestUsageChecked(t *testing.T) {
	st, srv := receiver(t)
	post := func(attrs ...*commonpb.KeyValue) (int, string) {
		t.Helper()
		good := &tracepb.Span{TraceId: bytes.Repeat([]byte{7}, 16), SpanId: bytes.Repeat([]byte{1}, 8), Name: "ok", StartTimeUnixNano: 1}
		sp := &tracepb.Span{TraceId: bytes.Repeat([]byte{7}, 16), SpanId: bytes.Repeat([]byte{2}, 8), Name: "chat", StartTimeUnixNano: 1,
			Attributes: append([]*commonpb.KeyValue{stringAttr("gen_ai.request.model", "gpt-4o-mini")}, attrs...)}
		b, err := proto.Marshal(request(good, sp))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Post(srv.URL+otlp.Route, "application/x-protobuf", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(out))
	}
	const where = "resourceSpans[0].scopeSpans[0].spans[1]: "
	for _, tc := range []struct {
		name  string
		attrs []*commonpb.KeyValue
		want  string
	}{
		{"negative input tokens", []*commonpb.KeyValue{intAttr("gen_ai.usage.input_tokens", -14_000_000), intAttr("gen_ai.usage.output_tokens", 5)},
			"attribute gen_ai.usage.input_tokens: -14000000 is negative (want 0..1000000000 tokens)"},
		{"negative output tokens", []*commonpb.KeyValue{intAttr("gen_ai.usage.output_tokens", -1)},
			"attribute gen_ai.usage.output_tokens: -1 is negative (want 0..1000000000 tokens)"},
		{"negative deprecated prompt tokens", []*commonpb.KeyValue{intAttr("gen_ai.usage.prompt_tokens", -3)},
			"attribute gen_ai.usage.prompt_tokens: -3 is negative (want 0..1000000000 tokens)"},
		{"negative cache tokens", []*commonpb.KeyValue{intAttr("gen_ai.usage.cache_read.input_tokens", -3)},
			"attribute gen_ai.usage.cache_read.input_tokens: -3 is negative"},
		{"absurd tokens", []*commonpb.KeyValue{intAttr("gen_ai.usage.input_tokens", 1<<40)},
			"attribute gen_ai.usage.input_tokens: 1099511627776 is more than one call can use (want 0..1000000000 tokens)"},
		{"fractional tokens", []*commonpb.KeyValue{doubleAttr("gen_ai.usage.input_tokens", 1.5)},
			"attribute gen_ai.usage.input_tokens: 1.5 is not a whole number of tokens"},
		{"text tokens", []*commonpb.KeyValue{stringAttr("gen_ai.usage.output_tokens", "many")},
			`attribute gen_ai.usage.output_tokens: "many" is not a number of tokens`},
		{"negative cost", []*commonpb.KeyValue{intAttr("gen_ai.usage.input_tokens", 10), doubleAttr("sextant.cost_usd", -4.5)},
			"attribute sextant.cost_usd: -4.5 is negative (want 0..1000000 US dollars)"},
		{"absurd cost", []*commonpb.KeyValue{doubleAttr("sextant.cost_usd", 1e300)},
			"attribute sextant.cost_usd: 1e+300 is more than one call can cost (want 0..1000000 US dollars)"},
		{"text cost", []*commonpb.KeyValue{stringAttr("sextant.cost_usd", "-1")},
			`attribute sextant.cost_usd: "-1" is not an amount of US dollars`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := post(tc.attrs...)
			if code != 400 || !strings.HasPrefix(out, where+tc.want) {
				t.Fatalf("%d %q, want 400 %q", code, out, where+tc.want)
			}
		})
	}
	if ts, _ := st.Tasks(context.Background(), store.Query{}); len(ts) != 0 {
		t.Fatalf("refused usage wrote %d tasks", len(ts))
	}
	// The edges pass: zero, the cap, a whole double, a free call.
	code, out := post(intAttr("gen_ai.usage.input_tokens", 1_000_000_000), doubleAttr("gen_ai.usage.output_tokens", 42), intAttr("gen_ai.usage.cache_read.input_tokens", 0))
	if code != 200 {
		t.Fatalf("good usage: %d %s", code, out)
	}
	tree, err := st.Tree(context.Background(), "otel-"+strings.Repeat("07", 16))
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range tree.Executions[0].Spans {
		if sp.Name != "chat" {
			continue
		}
		if v := sp.Attributes[store.AttrGenAIUsageOutputTokens]; v.Kind() != store.KindInt || v.Int() != 42 {
			t.Errorf("output tokens sent as 42.0 stored as %v (kind %d), want the integer 42", v.Any(), v.Kind())
		}
		if c := sp.Attributes["sextant.cost_usd"].Float(); c <= 0 {
			t.Errorf("cost %v, want the price of the usage", c)
		}
	}
}

// TestBusyRetryAfter: a request that finds no free slot (every one held
// by a body still arriving) is a 503 with a Retry-After, which OTLP
// exporters wait before sending again, at once: while the slot is still
// held, with a client still waiting for its answer. (Left waiting for the
// slot, it would block here until the test's timeout.)
func TestBusyRetryAfter(t *testing.T) {
	st, err := store.Open(context.Background(), t.TempDir(), store.NewConfig().WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h, err := otlp.NewHandler(otlp.Config{Store: st, Logger: quiet(), MaxConcurrent: 1})
	if err != nil {
		t.Fatal(err)
	}
	// The one slot: a body the handler is reading, that has not ended.
	pr, pw := io.Pipe()
	slow := httptest.NewRequest(http.MethodPost, "/v1/traces", pr)
	slow.Header.Set("Content-Type", "application/x-protobuf")
	done := make(chan int)
	go func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, slow)
		done <- rec.Code
	}()
	if _, err := pw.Write([]byte{0}); err != nil { // returns once the handler reads: it holds the slot
		t.Fatal(err)
	}
	for _, ct := range []string{"application/x-protobuf", "application/json"} {
		req := httptest.NewRequest(http.MethodPost, "/v1/traces", strings.NewReader("{}"))
		req.Header.Set("Content-Type", ct)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1" ||
			!strings.Contains(rec.Body.String(), "as many requests as it may at once (1)") {
			t.Errorf("%s: %d with Retry-After %q %s, want 503 with Retry-After 1 naming the limit", ct, rec.Code, rec.Header().Get("Retry-After"), rec.Body)
		}
	}
	pw.Close()
	<-done
}

// TestJSONNotAmplified: an OTLP/JSON body is decoded in memory of the
// order of its size, not decoded into maps first — where a 6 MiB array
// of zeros took some sixty times its size and seconds of CPU, a cheap
// flood — and its hex ids still reach the store.
func TestJSONNotAmplified(t *testing.T) {
	st, err := store.Open(context.Background(), t.TempDir(), store.NewConfig().WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h, err := otlp.NewHandler(otlp.Config{Store: st, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	span := `{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","parentSpanId" : "eee19b7ec3c1b173","name":"x\"traceId\":","kind":1,` +
		`"startTimeUnixNano":"1","endTimeUnixNano":"2","links":[{"traceId":"5b8efff798038103d269b633813fc60d","spanId":"eee19b7ec3c1b175"}]}`
	body := `{"resourceSpans":[{"scopeSpans":[{"spans":[` + span + `]}]}],"padding":[` + strings.Repeat("0,", 3<<20) + `0]}`
	req := httptest.NewRequest(http.MethodPost, "/v1/traces", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	h.ServeHTTP(rec, req)
	runtime.ReadMemStats(&after)
	if rec.Code != http.StatusOK {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 8*uint64(len(body)) {
		t.Errorf("a %d-byte body took %d bytes of allocations, want at most 8 times its size", len(body), n)
	}
	tree, err := st.Tree(context.Background(), "otel-5b8efff798038103d269b633813fc60c")
	if err != nil || len(tree.Executions) != 1 {
		t.Fatalf("tree %+v (%v), want one execution", tree, err)
	}
	spans := tree.Executions[0].Spans
	if len(spans) != 1 || spans[0].SpanID != "eee19b7ec3c1b174" || spans[0].ParentSpanID != "eee19b7ec3c1b173" || spans[0].Name != `x"traceId":` {
		t.Fatalf("stored %+v, want the span with its hex ids", spans)
	}
}
