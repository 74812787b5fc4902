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
	_, err := ParseRules("r.toml", []byte("[[rule]]\nreply = \"ok\"\n[[rule]]\nmatch = \"(\"\nwhen = \"1 +\"\nreply = \"{{\"\ndelay = \"soon\"\ncolour = 1\ninput_tokens = -1\n[default]\nstep = \"x\"\n"))
	if !errors.Is(err, sdk.ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
	got := strings.Split(err.Error(), "\n")
	want := []string{"r.toml:4: rule[1]: match: error parsing regexp", "r.toml:5: rule[1]: when: ",
		"r.toml:6: rule[1]: reply: ", `r.toml:7: rule[1]: delay: "soon" is not a duration`,
		"r.toml:8: rule.colour: unknown key", "r.toml:9: rule[1]: token counts cannot be negative",
		"r.toml:10: default: the default rule takes no conditions"}
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%v", len(got), len(want), err)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d = %q, want prefix %q", i, got[i], want[i])
		}
	}
}

// TestRulesLimits: a rules file nested too deeply is refused at its line
// before it is decoded; a syntax error says where it is.
func TestRulesLimits(t *testing.T) {
	deep := "[default]\nreply = \"x\"\nextra = " + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + "\n"
	if _, err := ParseRules("r.toml", []byte(deep)); !errors.Is(err, sdk.ErrInvalid) || err.Error() != "r.toml:3: nesting deeper than 64 levels" {
		t.Errorf("deep: err = %v", err)
	}
	if _, err := ParseRules("r.toml", []byte("[default]\nreply = \"x\"\nx = = 1\n")); !errors.Is(err, sdk.ErrInvalid) ||
		!strings.HasPrefix(err.Error(), "r.toml:3: ") {
		t.Errorf("syntax: err = %v", err)
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

func TestParseRulesTypeError(t *testing.T) {
	_, err := ParseRules("r.toml", []byte("[[rule]]\nstep = \"a\"\ninput_tokens = \"ten\"\nreply = \"x\"\n"))
	want := `r.toml:3: rule.input_tokens: incompatible types: TOML value has type string; destination has type integer`
	if !errors.Is(err, sdk.ErrInvalid) || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}
