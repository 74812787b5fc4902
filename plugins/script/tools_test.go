package script

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/sdktest"
)

const toolRules = `
[[rule]]
step = "research"
when = 'rounds == 0'
reply = "Looking it up."
[[rule.tool_calls]]
name = "get_weather"
arguments = '{"city": "{{ .input.city }}"}'
[[rule.tool_calls]]
name = "get_time"

[[rule]]
step = "research"
when = 'rounds == 1 && any(results, .is_error)'
[[rule.tool_calls]]
name = "get_time"
id = "retry"
arguments = '{"zone": "UTC"}'

[[rule]]
step = "research"
reply = '{{ range .results }}{{ .name }}={{ .content }};{{ end }} after {{ .rounds }} rounds'

[[rule]]
step = "bad-call"
[[rule.tool_calls]]
name = "rm_rf"

[[rule]]
step = "bad-args"
[[rule.tool_calls]]
name = "get_time"
arguments = '[{{ .input.city }}]'
`

var offered = []sdk.ToolSpec{{Name: "get_weather", InputSchema: json.RawMessage(`{"type":"object"}`)}, {Name: "get_time"}}

func research(p sdk.Provider, step string, msgs ...sdk.Message) (*sdk.ChatResponse, error) {
	return p.Chat(context.Background(), &sdk.ChatRequest{Step: step, Tools: offered,
		Messages: append([]sdk.Message{{Role: "user", Content: "Weather and time?"}}, msgs...),
		Config:   map[string]any{ConfigRules: toolRules, ConfigRulesFile: "responses.toml"},
		Vars:     map[string]any{"input": map[string]any{"city": "Paris"}}})
}

// TestToolCalls: a rules file drives a whole tool loop offline: the first
// round calls two tools, a failed result gets a retry, and the answer is
// built from the results; the same over the wire.
func TestToolCalls(t *testing.T) {
	for name, p := range map[string]sdk.Provider{"in-process": New(), "wire": sdktest.Wire(New())} {
		t.Run(name, func(t *testing.T) {
			resp, err := research(p, "research")
			if err != nil {
				t.Fatal(err)
			}
			calls := []sdk.ToolCall{{ID: "call_0_0", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
				{ID: "call_0_1", Name: "get_time", Arguments: json.RawMessage(`{}`)}}
			want := &sdk.ChatResponse{Text: "Looking it up.", FinishReason: "tool_calls", Model: "script", ToolCalls: calls,
				Usage: sdk.Usage{InputTokens: 5, OutputTokens: 13}}
			if !reflect.DeepEqual(resp, want) {
				t.Fatalf("round 0 = %+v\nwant      %+v", resp, want)
			}
			round1 := []sdk.Message{{Role: "assistant", Content: resp.Text, ToolCalls: resp.ToolCalls},
				{Role: "tool", ToolCallID: "call_0_0", Content: "12°C"}, {Role: "tool", ToolCallID: "call_0_1", Content: "no clock", IsError: true}}
			resp, err = research(p, "research", round1...)
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].ID != "retry" || string(resp.ToolCalls[0].Arguments) != `{"zone":"UTC"}` || resp.FinishReason != "tool_calls" {
				t.Fatalf("round 1 = %+v", resp)
			}
			round2 := append(round1, sdk.Message{Role: "assistant", ToolCalls: resp.ToolCalls}, sdk.Message{Role: "tool", ToolCallID: "retry", Content: "10:00"})
			resp, err = research(p, "research", round2...)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != "get_weather=12°C;get_time=no clock;get_time=10:00; after 2 rounds" || resp.FinishReason != "stop" || resp.ToolCalls != nil {
				t.Fatalf("round 2 = %+v", resp)
			}
		})
	}
}

// TestToolCallErrors: a rule calling a tool the step does not offer, or
// whose arguments are no JSON object, fails the call naming the rule; a
// rules file with a bad tool call is refused at its line.
func TestToolCallErrors(t *testing.T) {
	for _, tc := range []struct{ step, want string }{
		{"bad-call", `script provider: responses.toml: rule[3].tool_calls[0]: step "bad-call" offers no tool "rm_rf" (it offers get_weather, get_time)`},
		{"bad-args", `script provider: responses.toml: rule[4].tool_calls[0].arguments: not a JSON object: [Paris]`},
	} {
		_, err := research(New(), tc.step)
		if !errors.Is(err, sdk.ErrBadRequest) || err.Error() != tc.want {
			t.Errorf("%s: err = %v\nwant  %s", tc.step, err, tc.want)
		}
	}
	_, err := ParseRules("r.toml", []byte("[[rule]]\n[[rule.tool_calls]]\nname = \"a b\"\narguments = \"{{\"\nid = \"x\"\n[[rule.tool_calls]]\nname = \"f\"\nid = \"x\"\n"))
	want := []string{`r.toml:3: rule[0].tool_calls[0]: name: "a b" is not a tool name`, "r.toml:4: rule[0].tool_calls[0]: arguments: ",
		`r.toml:8: rule[0].tool_calls[1]: id: "x" is used twice in the rule`}
	got := strings.Split(errString(err), "\n")
	if !errors.Is(err, sdk.ErrInvalid) || len(got) != len(want) {
		t.Fatalf("err = %v", err)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d = %q, want prefix %q", i, got[i], want[i])
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestToolResultJSON: a result whose content is JSON is also decoded, so
// that a rule's condition and its arguments can use its fields; a result
// that is not JSON has none.
func TestToolResultJSON(t *testing.T) {
	const rules = `
[[rule]]
step = "s"
when = 'results[0].json.status == "lost" && results[0].json.total >= 40'
[[rule.tool_calls]]
name = "get_time"
arguments = '{"amount": {{ (index .results 0).json.total }}}'

[[rule]]
step = "s"
reply = 'no json: {{ (index .results 0).json }}'
`
	ask := func(content string) *sdk.ChatResponse {
		t.Helper()
		resp, err := sdktest.Wire(New()).Chat(context.Background(), &sdk.ChatRequest{Step: "s", Tools: offered,
			Messages: []sdk.Message{{Role: "user", Content: "?"}, {Role: "assistant", ToolCalls: []sdk.ToolCall{{ID: "c", Name: "get_weather"}}},
				{Role: "tool", ToolCallID: "c", Content: content}},
			Config: map[string]any{ConfigRules: rules}})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if r := ask(`{"status":"lost","total":42.5}`); len(r.ToolCalls) != 1 || string(r.ToolCalls[0].Arguments) != `{"amount":42.5}` {
		t.Errorf("JSON result: %+v", r)
	}
	if r := ask(`{"status":"lost","total":12}`); r.Text != "no json: map[status:lost total:12]" {
		t.Errorf("JSON result under the threshold: %q", r.Text)
	}
	if r := ask(`lost`); r.Text != "no json: <no value>" {
		t.Errorf("plain result: %q", r.Text)
	}
}
