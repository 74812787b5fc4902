package otlp_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net/http"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/sextant-dev/sextant/host/internal/otlp"
)

// batch is one OTLP/protobuf export of n spans in one trace: an agent
// span and LLM calls with GenAI attributes, as an instrumented agent
// sends them.
func batch(tb testing.TB, trace uint64, n int) []byte {
	tb.Helper()
	tid := make([]byte, 16)
	binary.BigEndian.PutUint64(tid[:8], trace+1)
	str := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	num := func(k string, v int64) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
	}
	spans := make([]*tracepb.Span, n)
	for i := range spans {
		sid := make([]byte, 8)
		binary.BigEndian.PutUint64(sid, uint64(i+1))
		spans[i] = &tracepb.Span{TraceId: tid, SpanId: sid, Name: "chat gpt-4o-mini", Kind: tracepb.Span_SPAN_KIND_CLIENT,
			StartTimeUnixNano: 1_700_000_000_000_000_000 + uint64(i)*1000, EndTimeUnixNano: 1_700_000_000_000_000_000 + uint64(i)*1000 + 500,
			Attributes: []*commonpb.KeyValue{str("gen_ai.operation.name", "chat"), str("gen_ai.provider.name", "openai"),
				str("gen_ai.request.model", "gpt-4o-mini"), num("gen_ai.usage.input_tokens", 120), num("gen_ai.usage.output_tokens", 30)}}
		if i > 0 {
			spans[i].ParentSpanId = spans[0].SpanId
		}
	}
	req := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:   &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "agent")}},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}},
	}}}
	b, err := proto.Marshal(req)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkServe/ingest measures spans stored per second through the
// OTLP/HTTP receiver over real HTTP: batches of 512 spans (the Go SDK's
// default export batch size), protobuf, two clients.
func BenchmarkServe(b *testing.B) {
	b.Run("ingest", func(b *testing.B) {
		const perBatch = 512
		_, srv := receiverB(b)
		url := srv.URL + otlp.Route
		bodies := make([][]byte, 64)
		for i := range bodies {
			bodies[i] = batch(b, uint64(i), perBatch)
		}
		client := &http.Client{}
		b.ResetTimer()
		cpu0 := cpuTime()
		b.SetParallelism(1)
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, url, bytes.NewReader(bodies[i%len(bodies)]))
				req.Header.Set("Content-Type", "application/x-protobuf")
				i++
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Errorf("status %d", resp.StatusCode)
					return
				}
			}
		})
		spans := float64(b.N * perBatch)
		b.ReportMetric(spans/b.Elapsed().Seconds(), "spans/s")
		b.ReportMetric(float64(cpuTime()-cpu0)/spans, "cpu-ns/span")
	})
}
