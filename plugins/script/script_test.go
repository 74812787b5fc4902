package script

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/sdktest"
)

const rules = `
[[rule]]
step = "classify"
match = '(?i)invoice from (\w+)'
reply = '{"action":"flag_financial","sender":"{{ index .match 1 }}"}'
output_tokens = 7

[[rule]]
step = "classify"
when = 'input.priority == "high"'
reply = '{"action":"escalate"}'

[[rule]]
step = "classify"
reply = '{"action":"archive","subject":"{{ .input.subject }}"}'

[default]
reply = "no idea"
`

func chat(t *testing.T, p sdk.Provider, step, prompt string, input map[string]any) (*sdk.ChatResponse, error) {
	t.Helper()
	return p.Chat(context.Background(), &sdk.ChatRequest{Step: step,
		Messages: []sdk.Message{{Role: "system", Content: "sys"}, {Role: "user", Content: prompt}},
		Config:   map[string]any{ConfigRules: rules, ConfigRulesFile: "responses.toml"},
		Vars:     map[string]any{"input": input}})
}

func TestRules(t *testing.T) {
	sdktest.Check(t, New())
	p := sdktest.Wire(New())
	tests := []struct {
		name, step, prompt string
		input              map[string]any
		want               string
	}{
		{"regexp with groups", "classify", "An INVOICE from Acme attached", nil, `{"action":"flag_financial","sender":"Acme"}`},
		{"expression over input", "classify", "hello", map[string]any{"priority": "high"}, `{"action":"escalate"}`},
		{"template over input", "classify", "hello", map[string]any{"priority": "low", "subject": "Lunch"}, `{"action":"archive","subject":"Lunch"}`},
		{"default", "reflect", "anything", nil, "no idea"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := chat(t, p, tc.step, tc.prompt, tc.input)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != tc.want {
				t.Fatalf("text = %q, want %q", resp.Text, tc.want)
			}
		})
	}
	resp, _ := chat(t, p, "classify", "invoice from Bob", nil)
	if resp.Usage.OutputTokens != 7 || resp.Usage.InputTokens != 4 {
		t.Fatalf("usage = %+v", resp.Usage)
	}
}

func TestNoMatch(t *testing.T) {
	p := New()
	_, err := p.Chat(context.Background(), &sdk.ChatRequest{Step: "x", Messages: []sdk.Message{{Role: "user", Content: "hi"}},
		Config: map[string]any{ConfigRules: "[[rule]]\nstep = \"y\"\nreply = \"r\"\n", ConfigRulesFile: "r.toml"}})
	if !errors.Is(err, sdk.ErrBadRequest) || err.Error() != `script provider: no rule in r.toml matches step "x" (prompt "hi")` {
		t.Fatalf("err = %v", err)
	}
}

func TestBadRules(t *testing.T) {
	_, err := ParseRules("r.toml", []byte("[[rule]]\nmatch = \"(\"\nwhen = \"1 +\"\nreply = \"{{\"\ndelay = \"soon\"\ncolour = 1\n[default]\nstep = \"x\"\n"))
	if !errors.Is(err, sdk.ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"r.toml: rule.colour: unknown key", "r.toml: rule[0]: match: error parsing regexp",
		"r.toml: rule[0]: when: ", "r.toml: rule[0]: reply: ", `r.toml: rule[0]: delay: "soon" is not a duration`,
		"r.toml: default: the default rule takes no conditions"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}

func TestDelayHonoursContext(t *testing.T) {
	p := New()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err := p.Chat(ctx, &sdk.ChatRequest{Messages: []sdk.Message{{Role: "user", Content: "x"}},
		Config: map[string]any{ConfigRules: "[default]\nreply = \"r\"\ndelay = \"1h\"\n"}})
	if !errors.Is(err, sdk.ErrTimeout) {
		t.Fatalf("err = %v, want a timeout", err)
	}
}
