package script

import "github.com/sextant-dev/sextant/sdk"

// RuleKeys documents the keys of each [[rule]] (and of [default]) in a
// rules file, for the reference docs (docs/reference/script-provider.md).
// TestRuleKeysDocumented holds them to the keys the provider decodes.
var RuleKeys = []sdk.ConfigField{
	{Name: "step", Type: "string", Doc: "the routine node the call is for; empty matches every step"},
	{Name: "match", Type: "string", Doc: "Go regexp (RE2) over the prompt (system and user messages); its submatches are .match in reply"},
	{Name: "when", Type: "string", Doc: "expr-lang condition over input, vars, step, rounds (rounds of tool calls since the last user message), results (their tool results: name, content, is_error) and tools (the offered tools' names)"},
	{Name: "reply", Type: "string", Doc: "the answer: a Go text/template over .input, .vars, .match, .rounds, .results and .tools; may be empty beside tool_calls"},
	{Name: "delay", Type: "duration", Doc: `simulated latency, e.g. "20ms"`},
	{Name: "input_tokens", Type: "number", Doc: "reported input tokens; default len(prompt)/4"},
	{Name: "output_tokens", Type: "number", Doc: "reported output tokens; default len(reply and tool calls)/4"},
	{Name: "tool_calls", Type: "table", Doc: "tool calls to answer with ([[rule.tool_calls]]); the answer's finish reason is then tool_calls"},
}

// ToolCallKeys documents the keys of each [[rule.tool_calls]].
var ToolCallKeys = []sdk.ConfigField{
	{Name: "name", Type: "string", Required: true, Doc: "the tool to call: one the step offers"},
	{Name: "arguments", Type: "string", Doc: "the call's arguments: a template (as reply) that renders to a JSON object; empty is {}"},
	{Name: "id", Type: "string", Doc: "the call's id; default call_ROUND_INDEX (ROUND counts the conversation's rounds of tool calls from 0)"},
}
