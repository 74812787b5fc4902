package store

import (
	"github.com/sextant-dev/sextant/sdk"
)

// OpenTelemetry GenAI semantic-convention attribute names for LLM spans
// (the conventions now kept in open-telemetry/semantic-conventions-genai;
// gen_ai.provider.name replaced gen_ai.system in semconv 1.37).
const (
	AttrGenAIOperationName         = "gen_ai.operation.name" // "chat"
	AttrGenAIProviderName          = "gen_ai.provider.name"  // "openai", "anthropic", …
	AttrGenAISystem                = "gen_ai.system"         // deprecated name of gen_ai.provider.name
	AttrGenAIRequestModel          = "gen_ai.request.model"
	AttrGenAIRequestTemperature    = "gen_ai.request.temperature"
	AttrGenAIRequestMaxTokens      = "gen_ai.request.max_tokens"
	AttrGenAIRequestStopSequences  = "gen_ai.request.stop_sequences"
	AttrGenAIResponseModel         = "gen_ai.response.model"
	AttrGenAIResponseFinishReasons = "gen_ai.response.finish_reasons"
	AttrGenAIUsageInputTokens      = "gen_ai.usage.input_tokens"
	AttrGenAIUsageOutputTokens     = "gen_ai.usage.output_tokens"
	AttrGenAIResponseID            = "gen_ai.response.id"
	AttrGenAIOutputType            = "gen_ai.output.type" // "text" | "json"
	AttrGenAIInputMessages         = "gen_ai.input.messages"
	AttrGenAIOutputMessages        = "gen_ai.output.messages"
	AttrServerAddress              = "server.address"
	AttrServerPort                 = "server.port"
	AttrErrorType                  = "error.type"
	// AttrSextantProvider is the [providers.NAME] block a call went
	// through (gen_ai.provider.name is the well-known provider).
	AttrSextantProvider = "sextant.provider"
)

// ChatSpanName is the span name the GenAI conventions give a chat call:
// "chat {model}".
func ChatSpanName(model string) string {
	if model == "" {
		return "chat"
	}
	return "chat " + model
}

// ChatSpanAttributes returns the GenAI attributes of one provider call,
// for a span of kind client. resp may be nil (the call failed).
func ChatSpanAttributes(provider string, req *sdk.ChatRequest, resp *sdk.ChatResponse) Attributes {
	// Room for what callers add (a run adds up to ten more).
	return ChatSpanAttributesRoom(provider, req, resp, 10)
}

// ChatSpanAttributesRoom is ChatSpanAttributes in a map with room for
// room more attributes, the ones its caller adds: a map that grows key by
// key rehashes as it goes, and one sized for more than it holds takes
// twice the memory past 14 entries.
func ChatSpanAttributesRoom(provider string, req *sdk.ChatRequest, resp *sdk.ChatResponse, room int) Attributes {
	// Gathered first, then put in a map made to measure.
	type attr struct {
		k string
		v Value
	}
	kv := make([]attr, 0, 11)
	kv = append(kv, attr{AttrGenAIOperationName, String("chat")})
	if provider != "" {
		kv = append(kv, attr{AttrGenAIProviderName, String(provider)})
	}
	if req != nil {
		if req.Model != "" {
			kv = append(kv, attr{AttrGenAIRequestModel, String(req.Model)})
		}
		if req.Temperature != nil {
			kv = append(kv, attr{AttrGenAIRequestTemperature, Float(*req.Temperature)})
		}
		if req.MaxTokens > 0 {
			kv = append(kv, attr{AttrGenAIRequestMaxTokens, Int(int64(req.MaxTokens))})
		}
		if len(req.Stop) > 0 {
			kv = append(kv, attr{AttrGenAIRequestStopSequences, Strings(req.Stop...)})
		}
	}
	if resp != nil {
		if resp.Model != "" {
			kv = append(kv, attr{AttrGenAIResponseModel, String(resp.Model)})
		}
		if resp.ID != "" {
			kv = append(kv, attr{AttrGenAIResponseID, String(resp.ID)})
		}
		if resp.FinishReason != "" {
			kv = append(kv, attr{AttrGenAIResponseFinishReasons, finishReasons(resp.FinishReason)})
		}
		kv = append(kv, attr{AttrGenAIUsageInputTokens, Int(int64(resp.Usage.InputTokens))},
			attr{AttrGenAIUsageOutputTokens, Int(int64(resp.Usage.OutputTokens))})
	}
	a := make(Attributes, len(kv)+max(room, 0))
	for _, x := range kv {
		a[x.k] = x.v
	}
	return a
}

// commonFinishReasons are the finish_reasons values of the usual finish
// reasons, made once: a Value's list is never written, so spans can
// share one.
var commonFinishReasons = func() map[string]Value {
	m := map[string]Value{}
	for _, r := range []string{"stop", "length", "tool_calls", "content_filter", "end_turn", "max_tokens", "stop_sequence", "tool_use"} {
		m[r] = Strings(r)
	}
	return m
}()

// finishReasons is the gen_ai.response.finish_reasons value of reason.
func finishReasons(reason string) Value {
	if v, ok := commonFinishReasons[reason]; ok {
		return v
	}
	return Strings(reason)
}
