package store

import (
	"reflect"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// TestChatSpanAttributesRoom: the attributes of a call are the same
// whatever room is asked for, and the room asked for takes as many more
// attributes without the map growing (a grown map allocates again).
func TestChatSpanAttributesRoom(t *testing.T) {
	temp := 0.5
	full := &sdk.ChatRequest{Model: "gpt", Temperature: &temp, MaxTokens: 9, Stop: []string{"x"}}
	resp := &sdk.ChatResponse{Model: "gpt-1", ID: "r1", FinishReason: "stop", Usage: sdk.Usage{InputTokens: 3, OutputTokens: 4}}
	want := Attributes{
		AttrGenAIOperationName: String("chat"), AttrGenAIProviderName: String("openai"),
		AttrGenAIRequestModel: String("gpt"), AttrGenAIRequestTemperature: Float(0.5), AttrGenAIRequestMaxTokens: Int(9),
		AttrGenAIRequestStopSequences: Strings("x"), AttrGenAIResponseModel: String("gpt-1"), AttrGenAIResponseID: String("r1"),
		AttrGenAIResponseFinishReasons: Strings("stop"), AttrGenAIUsageInputTokens: Int(3), AttrGenAIUsageOutputTokens: Int(4),
	}
	extra := []string{"e1", "e2", "e3", "e4", "e5", "e6", "e7", "e8"}
	for _, room := range []int{0, 3, 6, 8} {
		if got := ChatSpanAttributesRoom("openai", full, resp, room); !reflect.DeepEqual(got, want) {
			t.Errorf("room %d: %v, want %v", room, got, want)
		}
		made := testing.AllocsPerRun(50, func() { ChatSpanAttributesRoom("openai", full, resp, room) })
		filled := testing.AllocsPerRun(50, func() {
			a := ChatSpanAttributesRoom("openai", full, resp, room)
			for _, k := range extra[:room] {
				a[k] = Int(1)
			}
		})
		if filled != made {
			t.Errorf("room %d: %v allocations made, %v once the room is filled", room, made, filled)
		}
	}
	if got := ChatSpanAttributes("", nil, nil); !reflect.DeepEqual(got, Attributes{AttrGenAIOperationName: String("chat")}) {
		t.Errorf("no request or response: %v", got)
	}
}
