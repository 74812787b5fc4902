package strategy

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"text/template"

	"github.com/expr-lang/expr"
)

func TestEnvTemplate(t *testing.T) {
	s := mustLoad(t, filepath.Join("testdata", "email-handler.toml"))
	tmpl := template.Must(template.New("p").Parse(
		`{{ .strategy.metadata.name }} {{ .strategy.metadata.version }} confirm below {{ .strategy.parameters.user_confirmation }}; ` +
			`never: {{ index .strategy.constraints.never_execute 0 }}; cooldown {{ .strategy.evolution.cooldown }}
{{ .strategy.playbook_text }}`))
	var b bytes.Buffer
	if err := tmpl.Execute(&b, map[string]any{"strategy": s.Env()}); err != nil {
		t.Fatal(err)
	}
	want := `email-handler 2.0.0 confirm below 0.6; never: forward_to_external_addresses; cooldown 7d
[reasoning-00001] Treat invoices from unknown senders as financial actions (+5 -0)
[tone-00001] Reply to clients in the language they wrote in (+2 -1)`
	if b.String() != want {
		t.Errorf("template:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestEnvExpr(t *testing.T) {
	s := mustLoad(t, filepath.Join("testdata", "email-handler.toml"))
	env := map[string]any{"strategy": s.Env(), "confidence": 0.7}
	for src, want := range map[string]any{
		`confidence >= strategy.parameters.user_confirmation`:             true,
		`"change_account_settings" in strategy.constraints.never_execute`: true,
		`strategy.parameter_bounds.max_retries[1]`:                        5.0,
		`strategy.parameter_bounds.response_speed[1]`:                     1.0,
		`strategy.evolution.cooldown_seconds / 86400`:                     7.0,
		`len(strategy.playbook) + strategy.playbook[0].helpful`:           7,
		`strategy.change_log[1].changes[0].to`:                            0.75,
		`len(strategy.hash)`:                                              64,
	} {
		prog, err := expr.Compile(src, expr.Env(env))
		if err != nil {
			t.Errorf("compile %s: %v", src, err)
			continue
		}
		got, err := expr.Run(prog, env)
		if err != nil || got != want {
			t.Errorf("%s = %v (%T), %v; want %v (%T)", src, got, got, err, want, want)
		}
	}
}

func TestRefJSON(t *testing.T) {
	s := mustLoad(t, filepath.Join("testdata", "email-handler.toml"))
	ref := s.Ref()
	if ref.Name != "email-handler" || ref.Version != "2.0.0" || ref.Hash != s.Hash() || ref.Parameters["response_speed"] != 0.75 {
		t.Errorf("Ref = %+v", ref)
	}
	ref.Parameters["response_speed"] = 0
	ref.Document["parameters"].(map[string]any)["response_speed"] = 0.0
	if s.Parameters["response_speed"] != 0.75 {
		t.Error("changing the Ref changed the strategy")
	}
	data, err := json.Marshal(s.Ref())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"created_at":"2026-02-09T10:30:00Z"`) {
		t.Errorf("JSON document lacks created_at: %s", data)
	}
}

func TestPlaybookRendering(t *testing.T) {
	s := mustLoad(t, filepath.Join("testdata", "email-handler.toml"))
	s.Playbook[1].Content = "Reply in the client's\nlanguage,\tplease"
	want := "[reasoning-00001] Treat invoices from unknown senders as financial actions (+5 -0)\n" +
		"[tone-00001] Reply in the client's language, please (+2 -1)"
	if got := s.RenderPlaybook(); got != want {
		t.Errorf("RenderPlaybook:\n%s\nwant:\n%s", got, want)
	}
	if got := s.PlaybookTokens(); got != (len(want)+3)/4 {
		t.Errorf("PlaybookTokens = %d, want %d", got, (len(want)+3)/4)
	}
	if tokens, over := s.OverBudget(); over || tokens != 36 {
		t.Errorf("OverBudget = %d, %t; want 36, false (budget 400)", tokens, over)
	}
	s.Evolution.MaxPlaybookTokens = 35
	if _, over := s.OverBudget(); !over {
		t.Error("OverBudget = false with budget 35")
	}
	s.Evolution.MaxPlaybookTokens = 0
	if _, over := s.OverBudget(); over {
		t.Error("OverBudget = true without a budget")
	}
	for in, want := range map[string]int{"": 0, "a": 1, "abcd": 1, "abcde": 2, "ééééé": 2} {
		if got := EstimateTokens(in); got != want {
			t.Errorf("EstimateTokens(%q) = %d, want %d", in, got, want)
		}
	}
	if got := (&Strategy{}).RenderPlaybook(); got != "" {
		t.Errorf("empty playbook renders as %q", got)
	}
}
