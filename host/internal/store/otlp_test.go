package store

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestExportOTLP(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	fill(t, s)
	var buf bytes.Buffer
	n, err := s.ExportOTLP(ctx, &buf, OTLPOptions{})
	must(t, err)
	if n != 10 {
		t.Fatalf("exported %d spans, want 10", n)
	}
	golden(t, "export.otlp.json", buf.Bytes())

	var doc struct {
		ResourceSpans []struct {
			Resource struct {
				Attributes []otlpKV `json:"attributes"`
			} `json:"resource"`
			ScopeSpans []struct {
				Spans []struct {
					TraceID           string   `json:"traceId"`
					SpanID            string   `json:"spanId"`
					ParentSpanID      string   `json:"parentSpanId"`
					Name              string   `json:"name"`
					Kind              int      `json:"kind"`
					StartTimeUnixNano string   `json:"startTimeUnixNano"`
					EndTimeUnixNano   string   `json:"endTimeUnixNano"`
					Attributes        []otlpKV `json:"attributes"`
					Status            *struct {
						Code    int    `json:"code"`
						Message string `json:"message"`
					} `json:"status"`
				} `json:"spans"`
			} `json:"scopeSpans"`
		} `json:"resourceSpans"`
	}
	must(t, json.Unmarshal(buf.Bytes(), &doc))
	if len(doc.ResourceSpans) != 3 {
		t.Fatalf("%d resourceSpans, want one per task", len(doc.ResourceSpans))
	}
	llm := doc.ResourceSpans[0].ScopeSpans[0].Spans[1]
	if llm.Name != "chat gpt-4o-mini" || llm.Kind != 3 || llm.TraceID != TraceIDFor("task-c", "e1") || llm.ParentSpanID != SpanIDFor("task-c", "e1", 1) {
		t.Fatalf("llm span %+v", llm)
	}
	if llm.StartTimeUnixNano != "1770633000001000000" || llm.EndTimeUnixNano != "1770633000301000000" {
		t.Fatalf("times %s %s", llm.StartTimeUnixNano, llm.EndTimeUnixNano)
	}
	attrs := map[string]otlpAny{}
	for _, kv := range llm.Attributes {
		attrs[kv.Key] = kv.Value
	}
	str := func(k string) string {
		if v := attrs[k].StringValue; v != nil {
			return *v
		}
		if v := attrs[k].IntValue; v != nil {
			return "int:" + *v
		}
		return "?"
	}
	checks := map[string]string{
		"gen_ai.request.model":       "gpt-4o-mini",
		"gen_ai.provider.name":       "openai",
		"gen_ai.operation.name":      "chat",
		"gen_ai.usage.input_tokens":  "int:40",
		"gen_ai.usage.output_tokens": "int:9",
		"sextant.execution":          "e1",
		"sextant.task":               "task-c", // the newest first
		"sextant.span.seq":           "int:2",
	}
	for k, want := range checks {
		if got := str(k); got != want {
			t.Errorf("%s = %s, want %s", k, got, want)
		}
	}
	if fr := attrs["gen_ai.response.finish_reasons"].ArrayValue; fr == nil || *fr.Values[0].StringValue != "stop" {
		t.Errorf("finish reasons %+v", attrs["gen_ai.response.finish_reasons"])
	}
	if _, ok := attrs["gen_ai.system"]; ok {
		t.Error("deprecated gen_ai.system written without LegacyGenAISystem")
	}
	if act := doc.ResourceSpans[0].ScopeSpans[0].Spans[2]; act.Status == nil || act.Status.Code != 2 || act.Status.Message != "blocked by never_execute" {
		t.Errorf("error status %+v", act.Status)
	}

	buf.Reset()
	_, err = s.ExportOTLP(ctx, &buf, OTLPOptions{LegacyGenAISystem: true, Query: Query{Pipeline: "invoices"}})
	must(t, err)
	if !strings.Contains(buf.String(), `{"key":"gen_ai.system","value":{"stringValue":"openai"}}`) || strings.Contains(buf.String(), "task-a") {
		t.Fatalf("legacy/filtered export:\n%s", buf.String())
	}
}
