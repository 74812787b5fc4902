package store

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"

	"github.com/dgraph-io/badger/v4"
)

// OTLP export writes the OpenTelemetry protocol's JSON encoding
// (resourceSpans → scopeSpans → spans, hex ids, nanosecond times as
// strings, typed attribute values) that Jaeger, Tempo and the
// OpenTelemetry Collector's otlpjson receiver read.
//
// The structs below are written by hand rather than taken from
// go.opentelemetry.io/proto/otlp: that module brings protobuf-generated
// types whose JSON needs protojson plus id re-encoding (OTLP/JSON wants
// hex ids, protojson writes base64), and the part of the shape used here
// is a dozen fields that have been stable since OTLP 1.0.

// The attributes that say which task, execution and place in it a span
// has, in every OTLP sextant writes (the file export and live telemetry)
// and reads (the /v1/traces receiver): one vocabulary, so that sextant's
// own export posted back is the same task. Each is set once per span,
// over any stored attribute of the same name.
const (
	AttrPipeline  = "sextant.pipeline"  // resource: the task's pipeline
	AttrTask      = "sextant.task"      // span and resource: the task id
	AttrExecution = "sextant.execution" // span: the execution id
	AttrSpanSeq   = "sextant.span.seq"  // span: its sequence number in the execution
)

// IdentityAttributes returns sp's attributes (its Call's among them) with
// its identity (task, execution, sequence number) set over any of the
// same name, in a new map.
func IdentityAttributes(sp *Span) Attributes {
	n := len(sp.Attributes) + 3
	if sp.Call != nil {
		n += 24
	}
	out := make(Attributes, n)
	maps.Copy(out, sp.Attributes)
	if sp.Call != nil {
		out = sp.Call.AppendTo(out)
	}
	out[AttrTask] = String(sp.Task)
	out[AttrExecution] = String(sp.Execution)
	if sp.Seq > 0 {
		out[AttrSpanSeq] = Int(int64(sp.Seq))
	}
	return out
}

// OTLPOptions selects what ExportOTLP writes.
type OTLPOptions struct {
	Query Query // which tasks
	// LegacyGenAISystem also writes gen_ai.system (deprecated in favour
	// of gen_ai.provider.name) for backends that only know the old name.
	LegacyGenAISystem bool
}

type (
	otlpResourceSpans struct {
		Resource   otlpResource     `json:"resource"`
		ScopeSpans []otlpScopeSpans `json:"scopeSpans"`
	}
	otlpResource struct {
		Attributes []otlpKV `json:"attributes"`
	}
	otlpScopeSpans struct {
		Scope otlpScope  `json:"scope"`
		Spans []otlpSpan `json:"spans"`
	}
	otlpScope struct {
		Name string `json:"name"`
	}
	otlpSpan struct {
		TraceID           string      `json:"traceId"`
		SpanID            string      `json:"spanId"`
		ParentSpanID      string      `json:"parentSpanId,omitempty"`
		Name              string      `json:"name"`
		Kind              int         `json:"kind"`
		StartTimeUnixNano string      `json:"startTimeUnixNano"`
		EndTimeUnixNano   string      `json:"endTimeUnixNano"`
		Attributes        []otlpKV    `json:"attributes,omitempty"`
		Links             []otlpLink  `json:"links,omitempty"`
		Status            *otlpStatus `json:"status,omitempty"`
	}
	otlpLink struct {
		TraceID    string   `json:"traceId"`
		SpanID     string   `json:"spanId"`
		Attributes []otlpKV `json:"attributes,omitempty"`
	}
	otlpStatus struct {
		Code    int    `json:"code,omitempty"`
		Message string `json:"message,omitempty"`
	}
	otlpKV struct {
		Key   string  `json:"key"`
		Value otlpAny `json:"value"`
	}
	otlpAny struct {
		StringValue *string    `json:"stringValue,omitempty"`
		IntValue    *string    `json:"intValue,omitempty"` // int64 is a string in proto3 JSON
		DoubleValue *float64   `json:"doubleValue,omitempty"`
		BoolValue   *bool      `json:"boolValue,omitempty"`
		ArrayValue  *otlpArray `json:"arrayValue,omitempty"`
	}
	otlpArray struct {
		Values []otlpAny `json:"values"`
	}
)

// OTLP enum values (opentelemetry/proto/trace/v1/trace.proto).
var (
	otlpKind = map[SpanKind]int{
		"": 1, SpanInternal: 1, SpanServer: 2, SpanClient: 3, SpanProducer: 4, SpanConsumer: 5,
	}
	otlpCode = map[StatusCode]int{"": 0, CodeUnset: 0, CodeOK: 1, CodeError: 2}
)

// ExportOTLP writes the spans of the selected tasks as one OTLP JSON
// document: one resourceSpans per task (service.name "sextant", the
// pipeline and task id as resource attributes), its executions' spans in
// sequence order, each with its task, execution and sequence number
// (AttrTask, AttrExecution, AttrSpanSeq). LLM spans carry the OpenTelemetry GenAI attribute names
// (see ChatSpanAttributes); spans written with only the deprecated
// gen_ai.system get gen_ai.provider.name too.
func (s *Store) ExportOTLP(ctx context.Context, w io.Writer, opt OTLPOptions) (spans int, err error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString(`{"resourceSpans":[`)
	first := true
	var skipped []*DamageError
	err = s.view(ctx, func(txn *badger.Txn) error {
		err := s.eachTaskTxn(ctx, txn, opt.Query, nil, &skipped, func(t *Task, _ string) error {
			tr, err := readTree(ctx, txn, t.ID)
			if d := taskDamage(t.ID, err); d != nil {
				skipped = append(skipped, d)
				return nil
			}
			if err != nil {
				return fmt.Errorf("task %q: %w", t.ID, err)
			}
			rs := otlpResourceSpans{
				Resource: otlpResource{Attributes: []otlpKV{
					kvString("service.name", "sextant"),
					kvString(AttrPipeline, t.Pipeline),
					kvString(AttrTask, t.ID),
				}},
				ScopeSpans: []otlpScopeSpans{{Scope: otlpScope{Name: "github.com/sextant-dev/sextant"}}},
			}
			out := &rs.ScopeSpans[0].Spans
			for _, e := range tr.Executions {
				for _, sp := range e.Spans {
					*out = append(*out, toOTLP(&sp, opt.LegacyGenAISystem))
				}
			}
			if len(*out) == 0 {
				return nil
			}
			spans += len(*out)
			js, err := json.Marshal(rs)
			if err != nil {
				return fmt.Errorf("task %q: %w", t.ID, err)
			}
			if !first {
				bw.WriteByte(',')
			}
			first = false
			_, err = bw.Write(js)
			return err
		})
		if errors.Is(err, errStop) {
			err = nil
		}
		return err
	})
	if err == nil {
		bw.WriteString("]}\n")
		err = bw.Flush()
	}
	if err != nil {
		return spans, fmt.Errorf("export otlp: %w", err)
	}
	if len(skipped) > 0 {
		return spans, &SkippedError{Op: "export otlp", Skipped: skipped}
	}
	return spans, nil
}

func toOTLP(sp *Span, legacy bool) otlpSpan {
	end := sp.End
	if end.IsZero() {
		end = sp.Start // unfinished: OTLP needs an end
	}
	o := otlpSpan{
		TraceID:           sp.TraceID,
		SpanID:            sp.SpanID,
		ParentSpanID:      sp.ParentSpanID,
		Name:              sp.Name,
		Kind:              otlpKind[sp.Kind],
		StartTimeUnixNano: strconv.FormatInt(sp.Start.UnixNano(), 10),
		EndTimeUnixNano:   strconv.FormatInt(end.UnixNano(), 10),
	}
	// Write the current GenAI name, and the deprecated one only if asked.
	attrs := IdentityAttributes(sp)
	provider, hasProvider := attrs[AttrGenAIProviderName]
	system, hasSystem := attrs[AttrGenAISystem]
	if hasProvider || hasSystem {
		if !hasProvider {
			provider = system
			attrs[AttrGenAIProviderName] = provider
		}
		if legacy {
			attrs[AttrGenAISystem] = provider
		} else {
			delete(attrs, AttrGenAISystem)
		}
	}
	o.Attributes = otlpAttrs(attrs)
	for _, l := range sp.Links {
		o.Links = append(o.Links, otlpLink{TraceID: l.TraceID, SpanID: l.SpanID, Attributes: otlpAttrs(l.Attributes)})
	}
	if sp.Status != (SpanStatus{}) {
		st := &otlpStatus{Code: otlpCode[sp.Status.Code]}
		if sp.Status.Code == CodeError {
			st.Message = sp.Status.Message
		}
		if st.Code != 0 || st.Message != "" {
			o.Status = st
		}
	}
	return o
}

func otlpAttrs(a Attributes) []otlpKV {
	if len(a) == 0 {
		return nil
	}
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]otlpKV, 0, len(keys)+2)
	for _, k := range keys {
		out = append(out, otlpKV{Key: k, Value: anyOf(a[k])})
	}
	return out
}

func kvString(k, v string) otlpKV { return otlpKV{Key: k, Value: anyOf(String(v))} }

func anyOf(v Value) otlpAny {
	switch v.Kind() {
	case KindString:
		s := v.Str()
		return otlpAny{StringValue: &s}
	case KindInt:
		s := strconv.FormatInt(v.Int(), 10)
		return otlpAny{IntValue: &s}
	case KindFloat:
		f := v.Float()
		return otlpAny{DoubleValue: &f}
	case KindBool:
		b := v.Bool()
		return otlpAny{BoolValue: &b}
	case KindStrings:
		arr := &otlpArray{Values: make([]otlpAny, 0, len(v.List()))}
		for _, s := range v.List() {
			arr.Values = append(arr.Values, anyOf(String(s)))
		}
		return otlpAny{ArrayValue: arr}
	}
	return otlpAny{}
}
