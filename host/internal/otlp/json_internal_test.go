package otlp

import (
	"fmt"
	"strings"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
)

// jsonBatch is one OTLP/JSON export of n spans in one trace (hex ids), as
// an instrumented agent's exporter sends it.
func jsonBatch(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"agent"}}]},"scopeSpans":[{"spans":[`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		parent := ""
		if i > 0 {
			parent = `"parentSpanId":"0000000000000001",`
		}
		fmt.Fprintf(&b, `{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"%016x",%s"name":"chat gpt-4o-mini","kind":3,`+
			`"startTimeUnixNano":"%d","endTimeUnixNano":"%d","attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"chat"}},`+
			`{"key":"gen_ai.request.model","value":{"stringValue":"gpt-4o-mini"}},{"key":"gen_ai.usage.input_tokens","value":{"intValue":"120"}}]}`,
			i+1, parent, 1_700_000_000_000_000_000+i*1000, 1_700_000_000_000_000_000+i*1000+500)
	}
	b.WriteString(`]}]}]}`)
	return []byte(b.String())
}

// TestRewriteIDs: hex ids become base64 wherever a traceId, spanId or
// parentSpanId key holds a string, whatever the spacing; the same words
// as string values, or escaped inside one, are left alone; an id that is
// not hex is an error naming it.
func TestRewriteIDs(t *testing.T) {
	for in, want := range map[string]string{
		`{"traceId":"0aff","spanId" : "01","parentSpanId":""}`:       `{"traceId":"Cv8=","spanId" : "AQ==","parentSpanId":""}`,
		`{"name":"traceId","x":["spanId",{"k":"a\"spanId\":\"zz"}]}`: `{"name":"traceId","x":["spanId",{"k":"a\"spanId\":\"zz"}]}`,
		`{"traceId":null,"spanId":1}`:                                `{"traceId":null,"spanId":1}`,
		`{"traceId":"0a`:                                             `{"traceId":"0a`,
	} {
		got, err := rewriteIDs([]byte(in))
		if err != nil || string(got) != want {
			t.Errorf("rewriteIDs(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
	if _, err := rewriteIDs([]byte(`{"spanId":"xyz1"}`)); err == nil || err.Error() != `spanId "xyz1" is not hex` {
		t.Errorf("an id that is not hex: %v", err)
	}
}

// BenchmarkUnmarshalJSON decodes a 512-span OTLP/JSON export.
func BenchmarkUnmarshalJSON(b *testing.B) {
	body := jsonBatch(512)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if err := unmarshalJSON(body, &coltracepb.ExportTraceServiceRequest{}); err != nil {
			b.Fatal(err)
		}
	}
}
