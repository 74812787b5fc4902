package run

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// TestFastTemplate renders templates both ways: whenever the fast form
// answers, it prints what text/template prints, and it answers for the
// plain prompts it is for.
func TestFastTemplate(t *testing.T) {
	e := &exec{r: &Runner{compiled: &Compiled{}}, task: &store.Task{ID: "task-1"}}
	tok := sdk.Token{ID: "t1", Node: "s1", Attrs: map[string]any{"item": "a", "n": 3.0}}
	env := sdk.Env{
		Input: map[string]any{"topic": "cats", "nested": map[string]any{"k": "deep"}, "num": 2.5, "null": nil,
			"odd": "a <no value> b", "typed": map[string]string{"k": "v"}},
		Vars: map[string]any{"s1": "first answer", "list": []any{"x"}},
	}
	for _, tc := range []struct {
		src     string
		fast    bool // the fast form answers
		missing bool // render refuses a missing key
	}{
		{"Step 1 for {{ .input.topic }}", true, false},
		{"{{ .vars.s1 }} then {{.input.nested.k}} in {{ .task }} ({{ .token.item }})", true, false},
		{"plain text only", true, false},
		{"{{- .input.topic -}}  !", true, false},
		{"{{ .input.num }}", false, false},    // not a string: fmt's formatting
		{"{{ .input.missing }}", false, true}, // missing: an error naming it
		{"{{ .input.null }}", false, false},
		{"{{ .input.odd }}", false, false}, // a string holding "<no value>" is stripped
		{"{{ .input.typed.k }}", false, false},
		{"{{ .vars.list }}", false, false},
		{"{{ .token.n }}", false, false},
		{"{{ .strategy.x }}", false, true}, // a nil map: missing too
		{"{{ .input.topic | printf \"%q\" }}", false, false},
		{"{{ if .input.topic }}yes{{ end }}", false, false},
		{"{{ $x := .input.topic }}{{ $x }}", false, false},
		{"{{ upper .input.topic }}", false, false},
	} {
		tmpl, fast, err := e.r.template("prompt", tc.src)
		if err != nil {
			t.Fatalf("%q: %v", tc.src, err)
		}
		var b bytes.Buffer
		if err := tmpl.Execute(&b, e.data(tok, env)); err != nil {
			t.Fatalf("%q: %v", tc.src, err)
		}
		want := strings.ReplaceAll(b.String(), "<no value>", "")
		got, err := e.render("prompt", tc.src, tok, env)
		if (err != nil) != tc.missing {
			t.Fatalf("%q: render: %v", tc.src, err)
		}
		if err == nil && got != want {
			t.Errorf("%q: render %q, text/template %q", tc.src, got, want)
		}
		answered := false
		if fast != nil {
			var out string
			out, answered = fast.render(e, tok, env)
			answered = answered && !strings.Contains(out, "<no value>")
			if answered && out != want {
				t.Errorf("%q: fast form %q, text/template %q", tc.src, out, want)
			}
		}
		if answered != tc.fast {
			t.Errorf("%q: fast form answered %v, want %v", tc.src, answered, tc.fast)
		}
	}
}

// TestFastTemplateArena: texts rendered from the run's arena keep their
// bytes while the run renders more, from steps at once and past the
// arena's pieces, and a run's short prompts share an allocation.
func TestFastTemplateArena(t *testing.T) {
	e := &exec{r: &Runner{compiled: &Compiled{}}, task: &store.Task{ID: "task-1"}}
	const src = "Step {{ .input.n }} for {{ .input.topic }}"
	type rendered struct{ got, want string }
	const goroutines, each = 4, 200
	out := make([][]rendered, goroutines)
	var wg sync.WaitGroup
	for g := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				n := strconv.Itoa(g*each + i)
				topic := strings.Repeat("x", i%40)
				got, err := e.render("prompt", src, sdk.Token{}, sdk.Env{Input: map[string]any{"n": n, "topic": topic}})
				if err != nil {
					t.Error(err)
					return
				}
				out[g] = append(out[g], rendered{got, "Step " + n + " for " + topic})
			}
		}()
	}
	wg.Wait()
	for _, rs := range out {
		for _, r := range rs {
			if r.got != r.want {
				t.Fatalf("rendered %q, holds %q", r.want, r.got)
			}
		}
	}
	env := sdk.Env{Input: map[string]any{"n": "1", "topic": "cats"}}
	if n := testing.AllocsPerRun(100, func() { _, _ = e.render("prompt", src, sdk.Token{}, env) }); n != 0 {
		t.Errorf("a short prompt allocates %v times", n)
	}
}
