package script

import (
	"bytes"
	"testing"
	"text/template"

	"github.com/sextant-dev/sextant/sdk"
)

// TestFastReply renders replies both ways: whenever the fast form
// answers, it prints byte for byte what text/template prints over the
// same data, and it answers for the plain replies it is for.
func TestFastReply(t *testing.T) {
	vars := map[string]any{
		"input": map[string]any{"topic": "cats", "nested": map[string]any{"k": "deep"}, "num": 2.5, "null": nil,
			"typed": map[string]string{"k": "v"}, "odd": "a <no value> b", "utf": "é\x00\xff"},
		"vars": map[string]any{"s1": "first answer", "list": []any{"x"}},
	}
	match := []string{"Step 12", "12", ""}
	for _, tc := range []struct {
		src  string
		m    []string
		fast bool // the fast form answers
	}{
		{"answer {{ index .match 1 }}", match, true},
		{"{{index .match 0}}|{{ index .match 2 }}|", match, true},
		{`{"ok": true}`, nil, true},
		{"", nil, true},
		{"{{ .input.topic }} and {{ .vars.s1 }} ({{ .input.nested.k }})", nil, true},
		{"{{- .input.topic -}}  !", nil, true},
		{"{{ .input.odd }}{{ .input.utf }}", nil, true}, // printed as they are
		{"{{ index .match 3 }}", match, false},          // out of range: text/template's error
		{"{{ index .match 1 }}", nil, false},            // no regexp: no submatches
		{"{{ index .match 01 }}", match, false},         // octal
		{"{{ index .match 1.0 }}", match, false},        // a float
		{"{{ index .match 0x1 }}", match, false},
		{"{{ index .match 1 0 }}", match, false},
		{"{{ index .vars 1 }}", match, false},
		{"{{ .input.num }}", nil, false},
		{"{{ .input.missing }}", nil, false},
		{"{{ .input.null }}", nil, false},
		{"{{ .input.typed.k }}", nil, false},
		{"{{ .vars.list }}", nil, false},
		{"{{ .input }}", nil, false},
		{"{{ .match }}", match, false},
		{"{{ .rounds }}", nil, false},
		{"{{ .input.topic | printf \"%q\" }}", nil, false},
		{"{{ if .input.topic }}yes{{ end }}", nil, false},
		{"{{ $x := .input.topic }}{{ $x }}", nil, false},
		{"{{ .a }}{{ .b }}{{ .c }}{{ .d }}{{ .e }}{{ .f }}{{ .g }}{{ .h }}{{ .i }}", nil, false},
	} {
		tmpl, err := template.New("rule[0]").Option("missingkey=zero").Parse(tc.src)
		if err != nil {
			t.Fatalf("%q: %v", tc.src, err)
		}
		data := (&callEnv{r: chatRequest(vars)}).data(tc.m)
		var b bytes.Buffer
		slowErr := tmpl.Execute(&b, data)
		got, answered := compileFast(tmpl).render(vars, tc.m)
		if answered && (slowErr != nil || got != b.String()) {
			t.Errorf("%q: fast form %q, text/template %q (%v)", tc.src, got, b.String(), slowErr)
		}
		if answered != tc.fast {
			t.Errorf("%q: fast form answered %v, want %v", tc.src, answered, tc.fast)
		}
	}
}

// TestFastReplyChat checks that a reply the fast form renders is the one
// a call answers with, and that one it refuses still fails as
// text/template fails.
func TestFastReplyChat(t *testing.T) {
	const rules = `
[[rule]]
step = "a"
match = 'Step (\d+)'
reply = "answer {{ index .match 1 }} on {{ .input.topic }}"

[[rule]]
step = "b"
match = 'Step (\d+)'
reply = "answer {{ index .match 2 }}"
`
	p := New()
	for _, tc := range []struct{ step, want, err string }{
		{"a", "answer 7 on cats", ""},
		{"b", "", "script provider: reply template: template: rule[1]:1:10: executing \"rule[1]\" at <index .match 2>: error calling index: reflect: slice index out of range"},
	} {
		req := chatRequest(map[string]any{"input": map[string]any{"topic": "cats"}})
		req.Step, req.Config = tc.step, map[string]any{ConfigRules: rules}
		resp, err := p.Chat(t.Context(), req)
		switch {
		case tc.err != "":
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: err = %v, want %s", tc.step, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.step, err)
		case resp.Text != tc.want:
			t.Errorf("%s: text = %q, want %q", tc.step, resp.Text, tc.want)
		}
	}
}

// chatRequest is a request whose prompt is "Step 7" and whose variables
// are vars.
func chatRequest(vars map[string]any) *sdk.ChatRequest {
	return &sdk.ChatRequest{Messages: []sdk.Message{{Role: "user", Content: "Step 7"}}, Vars: vars}
}
