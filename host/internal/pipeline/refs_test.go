package pipeline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

func TestExprPaths(t *testing.T) {
	for _, tt := range []struct{ src, want string }{
		{`vars.classify.confidence >= strategy.parameters.user_confirmation`, `[[vars classify confidence] [strategy parameters user_confirmation]]`},
		{`=vars.confirm.answer = "yes"`, `[[vars confirm answer]]`},           // FEEL
		{`vars.a == "vars.b" && 'strategy.parameters.x' != ""`, `[[vars a]]`}, // strings are not references
		{`"a \" vars.b" + vars.c`, `[[vars c]]`},                              // escaped quote
		{`len(vars.items) > 0 and x.y`, `[[vars items] [x y]]`},               // calls, FEEL and
		{`f(x).vars.a + m["k"].vars.b + a.vars.c`, `[[a vars c]]`},            // members are not roots
		{`amount > 100`, `[]`}, // bare names are not checked
		{`vars?.a`, `[]`},      // optional chaining stops a path
		{`vars.a1_b.c2`, `[[vars a1_b c2]]`},
		{`"unterminated vars.a`, `[]`},
	} {
		if got := fmt.Sprint(exprPaths(tt.src)); got != tt.want {
			t.Errorf("exprPaths(%q) = %s, want %s", tt.src, got, tt.want)
		}
	}
}

func TestTemplatePaths(t *testing.T) {
	for _, tt := range []struct{ src, want string }{
		{`{{ .vars.classify.action }} {{ .input.from }}`, `[[vars classify action] [input from]]`},
		{`{{ if .vars.a }}{{ .strategy.parameters.x }}{{ end }}`, `[[vars a] [strategy parameters x]]`},
		{`{{ with .vars.a }}{{ .b.c }}{{ end }}`, `[[vars a]]`},
		{`{{ range .vars.list }}{{ .name.first }}{{ $.vars.b.c }}{{ end }}`, `[[vars list] [vars b c]]`},
		{`{{ playbook }} {{ json .vars.x }}`, `[[vars x]]`},
		{`{{ .vars.`, `[]`}, // a bad template is reported elsewhere
	} {
		if got := fmt.Sprint(templatePaths(tt.src)); got != tt.want {
			t.Errorf("templatePaths(%q) = %s, want %s", tt.src, got, tt.want)
		}
	}
}

// routineResolver is staticResolver with a routine that holds a condition.
type routineResolver struct {
	staticResolver
	param string // the strategy parameter the condition names
}

func (rr routineResolver) LoadRoutine(ctx context.Context, nav, file string, decisions []sdk.File) (*sdk.Routine, error) {
	r, _ := staticResolver{}.LoadRoutine(ctx, nav, file, decisions)
	r.Nodes[1].Outputs = []string{"label"}
	r.Expressions = []sdk.Expression{
		{Element: `sequenceFlow "f_sure"`, Line: 51, What: "condition", Text: "=vars.classify.confidence >= strategy.parameters." + rr.param},
		{Element: `sequenceFlow "f_yes"`, Line: 56, What: "condition", Text: `=vars.confirm.answer = "yes" and vars.label != null`},
	}
	return r, nil
}

func TestLoadReferences(t *testing.T) {
	strategy, err := os.ReadFile("../../../pipelines/email-triage/strategies/email-handler.toml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		param string
		edit  func(string) string
		want  []string
	}{
		{"good", "response_speed", func(s string) string {
			return s
		}, nil},
		{"typos in the routine, a template, an expression and the score", "response_sped", func(s string) string {
			s = strings.Replace(s, `action = "{{ .vars.classify.action }}"`, `action = "{{ .vars.clasify.action }} {{ .strategy.parameters.user_confirmaton }}"`, 1)
			s = strings.Replace(s, `confidence = "vars.classify.confidence"`, `confidence = "vars.clasify.urgency"`, 1)
			return strings.Replace(s, `success = "output.action == truth.action"`, `success = "output.acton == truth.action && vars.act != nil"`, 1)
		}, []string{
			`pipeline.toml:21: steps.act.action: vars.clasify: no step, node or output of the routine is called "clasify" (did you mean "classify"?)`,
			`pipeline.toml:21: steps.act.action: strategy.parameters.user_confirmaton: the strategy has no parameter "user_confirmaton" (did you mean "user_confirmation"?)`,
			`pipeline.toml:22: steps.act.confidence: vars.clasify: no step, node or output of the routine is called "clasify" (did you mean "classify"?)`,
			`pipeline.toml:30: score.success: output.acton: no step, node or output of the routine is called "acton" (did you mean "action"?)`,
			`r.bpmn:51: sequenceFlow "f_sure": condition: strategy.parameters.response_sped: the strategy has no parameter "response_sped" (did you mean "response_speed"?)`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := setup(t, tc.edit(good))
			dir := filepath.Dir(path)
			if err := os.WriteFile(filepath.Join(dir, "s.toml"), []byte(strategy), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(context.Background(), path, routineResolver{param: tc.param}, Options{
				Getenv: func(string) (string, bool) { return "", false }, CheckStrategy: func(string) error { return nil }})
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, sdk.ErrInvalid) {
				t.Fatalf("err = %v, want invalid", err)
			}
			got := strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "")
			if got != strings.Join(tc.want, "\n") {
				t.Fatalf("got:\n%s\nwant:\n%s", got, strings.Join(tc.want, "\n"))
			}
		})
	}
}
