package store

import (
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/sextant-dev/sextant/sdk"
)

// The sextant attributes of a provider call's span.
const (
	AttrRequestHash = "sextant.request_hash" // the request's hash (its recording's name)
	AttrRecording   = "sextant.recording"    // the key of the call's recording
	AttrRecorded    = "sextant.recorded"     // whether a recording answered the call
	AttrCostUSD     = "sextant.cost_usd"
	AttrLatencyMS   = "sextant.latency_ms"
	// AttrCited lists the playbook bullets the reply cited.
	AttrCited = "sextant.playbook.cited"
)

// CallAttributes are the attributes of a provider call's span as fields,
// which a span made in this process carries (Span.Call) instead of a map
// of some seventeen entries made only to be encoded. Each field is the
// attribute its comment names, present when the comment says; a span's
// attributes are those of its Call and of its Attributes map, which
// holds none of the same keys. Readers go through Span.Attr, Span.Attrs
// and Span.AllAttributes, which see both; the store writes a span with
// a Call exactly as one whose map holds the same attributes. See
// RATIONALE.md, "Why a provider call's span holds its attributes as
// fields, not a map".
type CallAttributes struct {
	// System is gen_ai.provider.name (if not empty), the well-known
	// provider; Block is sextant.provider (if not empty), the
	// [providers.NAME] block the call went through.
	System, Block string
	// The request: gen_ai.request.model, .temperature (if
	// HasTemperature), .max_tokens (if above 0), .stop_sequences, and
	// gen_ai.output.type ("text" or "json"), each if not empty.
	Model          string
	Temperature    float64
	HasTemperature bool
	MaxTokens      int
	Stop           []string
	OutputType     string
	// Response says the call answered: gen_ai.usage.input_tokens and
	// output_tokens are present, and gen_ai.response.model, .id and
	// .finish_reasons (a list of FinishReason) if not empty.
	Response                                bool
	ResponseModel, ResponseID, FinishReason string
	InputTokens, OutputTokens               int
	// Server and Port are server.address and server.port, if HasServer.
	Server    string
	Port      int
	HasServer bool
	// ErrorType is error.type and RequestHash sextant.request_hash, if
	// not empty.
	ErrorType, RequestHash string
	// Recording is sextant.recording; with it (not empty) come
	// sextant.recorded, sextant.cost_usd and sextant.latency_ms.
	Recording string
	Recorded  bool
	CostUSD   float64
	LatencyMS int64
	// Cited is sextant.playbook.cited, if not empty.
	Cited []string
}

// SetChat sets the GenAI attributes ChatSpanAttributes makes of one
// provider call (gen_ai.operation.name is always "chat"); req and resp
// may be nil. Fields it does not set are left as they are.
func (c *CallAttributes) SetChat(provider string, req *sdk.ChatRequest, resp *sdk.ChatResponse) {
	c.System = provider
	if req != nil {
		c.Model = req.Model
		c.HasTemperature = req.Temperature != nil
		if c.HasTemperature {
			c.Temperature = *req.Temperature
		}
		c.MaxTokens = req.MaxTokens
		c.Stop = nil
		if len(req.Stop) > 0 {
			c.Stop = slices.Clone(req.Stop)
		}
	}
	c.Response = resp != nil
	if resp != nil {
		c.ResponseModel, c.ResponseID, c.FinishReason = resp.Model, resp.ID, resp.FinishReason
		c.InputTokens, c.OutputTokens = resp.Usage.InputTokens, resp.Usage.OutputTokens
	}
}

// each yields c's attributes, their keys in sorted order (the order the
// store writes them in).
func (c *CallAttributes) each(yield func(string, Value) bool) {
	rec := c.Recording != ""
	if c.ErrorType != "" && !yield(AttrErrorType, String(c.ErrorType)) {
		return
	}
	if !yield(AttrGenAIOperationName, chatOperation) {
		return
	}
	if c.OutputType != "" && !yield(AttrGenAIOutputType, String(c.OutputType)) {
		return
	}
	if c.System != "" && !yield(AttrGenAIProviderName, String(c.System)) {
		return
	}
	if c.MaxTokens > 0 && !yield(AttrGenAIRequestMaxTokens, Int(int64(c.MaxTokens))) {
		return
	}
	if c.Model != "" && !yield(AttrGenAIRequestModel, String(c.Model)) {
		return
	}
	if len(c.Stop) > 0 && !yield(AttrGenAIRequestStopSequences, Value{kind: KindStrings, ss: c.Stop}) {
		return
	}
	if c.HasTemperature && !yield(AttrGenAIRequestTemperature, Float(c.Temperature)) {
		return
	}
	if c.Response && c.FinishReason != "" && !yield(AttrGenAIResponseFinishReasons, finishReasons(c.FinishReason)) {
		return
	}
	if c.Response && c.ResponseID != "" && !yield(AttrGenAIResponseID, String(c.ResponseID)) {
		return
	}
	if c.Response && c.ResponseModel != "" && !yield(AttrGenAIResponseModel, String(c.ResponseModel)) {
		return
	}
	if c.Response && !yield(AttrGenAIUsageInputTokens, Int(int64(c.InputTokens))) {
		return
	}
	if c.Response && !yield(AttrGenAIUsageOutputTokens, Int(int64(c.OutputTokens))) {
		return
	}
	if c.HasServer && !yield(AttrServerAddress, String(c.Server)) {
		return
	}
	if c.HasServer && !yield(AttrServerPort, Int(int64(c.Port))) {
		return
	}
	if rec && !yield(AttrCostUSD, Float(c.CostUSD)) {
		return
	}
	if rec && !yield(AttrLatencyMS, Int(c.LatencyMS)) {
		return
	}
	if len(c.Cited) > 0 && !yield(AttrCited, Value{kind: KindStrings, ss: c.Cited}) {
		return
	}
	if c.Block != "" && !yield(AttrSextantProvider, String(c.Block)) {
		return
	}
	if rec && !yield(AttrRecorded, Bool(c.Recorded)) {
		return
	}
	if rec && !yield(AttrRecording, String(c.Recording)) {
		return
	}
	if c.RequestHash != "" && !yield(AttrRequestHash, String(c.RequestHash)) {
		return
	}
}

// chatOperation is the gen_ai.operation.name of every provider call.
var chatOperation = String("chat")

// attr is c's attribute key, if c has it.
func (c *CallAttributes) attr(key string) (Value, bool) {
	var v Value
	var ok bool
	switch key {
	case AttrErrorType:
		v, ok = String(c.ErrorType), c.ErrorType != ""
	case AttrGenAIOperationName:
		v, ok = chatOperation, true
	case AttrGenAIOutputType:
		v, ok = String(c.OutputType), c.OutputType != ""
	case AttrGenAIProviderName:
		v, ok = String(c.System), c.System != ""
	case AttrGenAIRequestMaxTokens:
		v, ok = Int(int64(c.MaxTokens)), c.MaxTokens > 0
	case AttrGenAIRequestModel:
		v, ok = String(c.Model), c.Model != ""
	case AttrGenAIRequestStopSequences:
		v, ok = Value{kind: KindStrings, ss: c.Stop}, len(c.Stop) > 0
	case AttrGenAIRequestTemperature:
		v, ok = Float(c.Temperature), c.HasTemperature
	case AttrGenAIResponseFinishReasons:
		if ok = c.Response && c.FinishReason != ""; ok {
			v = finishReasons(c.FinishReason)
		}
	case AttrGenAIResponseID:
		v, ok = String(c.ResponseID), c.Response && c.ResponseID != ""
	case AttrGenAIResponseModel:
		v, ok = String(c.ResponseModel), c.Response && c.ResponseModel != ""
	case AttrGenAIUsageInputTokens:
		v, ok = Int(int64(c.InputTokens)), c.Response
	case AttrGenAIUsageOutputTokens:
		v, ok = Int(int64(c.OutputTokens)), c.Response
	case AttrServerAddress:
		v, ok = String(c.Server), c.HasServer
	case AttrServerPort:
		v, ok = Int(int64(c.Port)), c.HasServer
	case AttrCostUSD:
		v, ok = Float(c.CostUSD), c.Recording != ""
	case AttrLatencyMS:
		v, ok = Int(c.LatencyMS), c.Recording != ""
	case AttrCited:
		v, ok = Value{kind: KindStrings, ss: c.Cited}, len(c.Cited) > 0
	case AttrSextantProvider:
		v, ok = String(c.Block), c.Block != ""
	case AttrRecorded:
		v, ok = Bool(c.Recorded), c.Recording != ""
	case AttrRecording:
		v, ok = String(c.Recording), c.Recording != ""
	case AttrRequestHash:
		v, ok = String(c.RequestHash), c.RequestHash != ""
	}
	if !ok {
		return Value{}, false
	}
	return v, true
}

// AppendTo sets c's attributes in a (made if nil) and returns it.
func (c *CallAttributes) AppendTo(a Attributes) Attributes {
	if a == nil {
		a = make(Attributes, 24)
	}
	for k, v := range c.each {
		a[k] = v
	}
	return a
}

// check reports c's first attribute that cannot be stored (a float that
// is NaN or infinite), as checkAttributes would.
func (c *CallAttributes) check() error {
	for k, v := range c.each {
		if v.kind == KindFloat && (math.IsNaN(v.Float()) || math.IsInf(v.Float(), 0)) {
			return fmt.Errorf("attribute %q: %w", k, errNotFinite)
		}
	}
	return nil
}

// Attr is sp's attribute key, or the zero Value if it has none.
func (sp *Span) Attr(key string) Value {
	v, _ := sp.LookupAttr(key)
	return v
}

// LookupAttr is sp's attribute key, from its Attributes or its Call, and
// whether it has it.
func (sp *Span) LookupAttr(key string) (Value, bool) {
	if v, ok := sp.Attributes[key]; ok {
		return v, true
	}
	if sp.Call != nil {
		return sp.Call.attr(key)
	}
	return Value{}, false
}

// Attrs yields every attribute of sp, those of its Call (in key order)
// then those of its Attributes (in the map's order).
func (sp *Span) Attrs() iter.Seq2[string, Value] {
	return func(yield func(string, Value) bool) {
		if sp.Call != nil {
			stopped := false
			sp.Call.each(func(k string, v Value) bool {
				if !yield(k, v) {
					stopped = true
				}
				return !stopped
			})
			if stopped {
				return
			}
		}
		for k, v := range sp.Attributes {
			if !yield(k, v) {
				return
			}
		}
	}
}

// AllAttributes is every attribute of sp in one map: sp.Attributes itself
// when sp has no Call, else a new map (which the caller may change).
func (sp *Span) AllAttributes() Attributes {
	if sp.Call == nil {
		return sp.Attributes
	}
	a := make(Attributes, len(sp.Attributes)+24)
	maps.Copy(a, sp.Attributes)
	return sp.Call.AppendTo(a)
}

// MarshalJSON writes sp's fields as encoding/json does, the attributes
// of its Call among its attributes. It writes them with the store's span
// encoder (appendSpanBody), without reflection: run states, Temporal
// results and API answers encode many spans. The one difference from
// encoding/json is that times are written in UTC (the same instants).
// A span the encoder would not write as encoding/json does (see
// encoderWrites, or a value it refuses) goes through encoding/json.
func (sp Span) MarshalJSON() ([]byte, error) {
	if encoderWrites(&sp) {
		b := make([]byte, 0, 256+64*(len(sp.Attributes)+len(sp.Links)))
		b = append(b, `{"task":`...)
		b = appendJSONString(b, sp.Task)
		b = append(b, `,"execution":`...)
		b = appendJSONString(b, sp.Execution)
		b = append(b, `,"seq":`...)
		b = strconv.AppendUint(b, sp.Seq, 10)
		b = append(b, ',')
		if b, err := appendSpanBody(b, &sp); err == nil {
			return append(b, '}'), nil
		}
	}
	type plain Span // without this method
	if sp.Call != nil {
		sp.Attributes, sp.Call = sp.AllAttributes(), nil
	}
	return json.Marshal(plain(sp))
}

// encoderWrites is whether appendSpanBody writes sp as encoding/json
// does but for its times' zone: ids of hex digits (it copies them
// unquoted), times whose UTC year has four digits (it writes any other
// year as no decoder reads it, where encoding/json refuses it or writes
// it in its own zone) and no attribute both in the map and the Call (it
// would write the key twice, the map's value read back).
func encoderWrites(sp *Span) bool {
	if !hexIDs(sp) || !utcYearIn(sp.Start) || !utcYearIn(sp.End) {
		return false
	}
	if sp.Call != nil {
		for k := range sp.Attributes {
			if _, ok := sp.Call.attr(k); ok {
				return false
			}
		}
	}
	return true
}

// hexIDs is whether every trace and span id of sp, links' included, is
// hex digits (or empty), as appendSpanBody writes them without quoting.
func hexIDs(sp *Span) bool {
	ok := hexID(sp.TraceID) && hexID(sp.SpanID) && hexID(sp.ParentSpanID)
	for i := 0; ok && i < len(sp.Links); i++ {
		ok = hexID(sp.Links[i].TraceID) && hexID(sp.Links[i].SpanID)
	}
	return ok
}

// hexID is whether s is hex digits only.
func hexID(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
