package script

import "github.com/sextant-dev/sextant/sdk"

// RuleKeys documents the keys of each [[rule]] (and of [default]) in a
// rules file, for the reference docs (docs/reference/script-provider.md).
// TestRuleKeysDocumented holds them to the keys the provider decodes.
var RuleKeys = []sdk.ConfigField{
	{Name: "step", Type: "string", Doc: "the routine node the call is for; empty matches every step"},
	{Name: "match", Type: "string", Doc: "Go regexp (RE2) over the prompt (system and user messages); its submatches are .match in reply"},
	{Name: "when", Type: "string", Doc: "expr-lang condition over input, vars and step"},
	{Name: "reply", Type: "string", Required: true, Doc: "the answer: a Go text/template over .input, .vars and .match"},
	{Name: "delay", Type: "duration", Doc: `simulated latency, e.g. "20ms"`},
	{Name: "input_tokens", Type: "number", Doc: "reported input tokens; default len(prompt)/4"},
	{Name: "output_tokens", Type: "number", Doc: "reported output tokens; default len(reply)/4"},
}
