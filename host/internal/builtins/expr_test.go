package builtins

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestEvalFEEL(t *testing.T) {
	tests := []struct {
		src       string
		vars      map[string]any
		text, js  string
		syntax    bool
		evalError bool
	}{
		{src: `amount > 1000 and status in ["new","open"]`, vars: map[string]any{"amount": json.Number("1500"), "status": "open"}, text: "true", js: "true\n"},
		{src: `0.1 + 0.2`, text: "0.3", js: "0.3\n"},
		{src: `"a" + "b"`, text: `"ab"`, js: "\"ab\"\n"},
		{src: `date("2024-01-31") + duration("P1M")`, text: `@"2024-02-29"`, js: "\"2024-02-29\"\n"},
		{src: `{a: [1, 2]}`, text: "{a: [1, 2]}", js: "{\n  \"a\": [\n    1,\n    2\n  ]\n}\n"},
		{src: `1 +`, syntax: true},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			v, err := EvalFEEL(tt.src, tt.vars)
			var se *ExprSyntaxError
			if tt.syntax {
				if !errors.As(err, &se) || len(err.Error()) < 6 || err.Error()[:5] != "expr:" {
					t.Fatalf("got %v, want an expr: syntax error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := v.Text(); got != tt.text {
				t.Errorf("text: got %q, want %q", got, tt.text)
			}
			js, err := v.JSON()
			if err != nil || string(js) != tt.js {
				t.Errorf("json: got %q, %v; want %q", js, err, tt.js)
			}
		})
	}
}

func TestEvalExprLang(t *testing.T) {
	tests := []struct {
		src      string
		vars     map[string]any
		text, js string
		err      string
		syntax   bool
	}{
		{src: `vars.n * 2`, vars: map[string]any{"vars": map[string]any{"n": int64(3)}}, text: "6", js: "6\n"},
		{src: `"x<y"`, text: `"x<y"`, js: "\"x\\u003cy\"\n"},
		{src: `nil`, text: "nil", js: "null\n"},
		{src: `1.5 > 1`, text: "true", js: "true\n"},
		{src: `[1, "a"]`, text: `[1,"a"]`, js: "[\n  1,\n  \"a\"\n]\n"},
		{src: `1 + )`, syntax: true, err: "expr:1:5: "},
		{src: `x.y`, vars: map[string]any{"x": 1}, syntax: true},
		{src: `x[5]`, vars: map[string]any{"x": []any{1}}, err: "evaluate: "},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			v, err := EvalExprLang(tt.src, tt.vars)
			var se *ExprSyntaxError
			if tt.syntax != errors.As(err, &se) {
				t.Fatalf("got %v, syntax error %v", err, tt.syntax)
			}
			if tt.err != "" || tt.syntax {
				if err == nil || len(err.Error()) < len(tt.err) || err.Error()[:len(tt.err)] != tt.err {
					t.Fatalf("got %v, want %q…", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := v.Text(); got != tt.text {
				t.Errorf("text: got %q, want %q", got, tt.text)
			}
			js, err := v.JSON()
			if err != nil || string(js) != tt.js {
				t.Errorf("json: got %q, %v; want %q", js, err, tt.js)
			}
		})
	}
}

func TestExprValueWrite(t *testing.T) {
	v, err := EvalFEEL(`"a" + "b"`, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		asJSON bool
		want   string
	}{{false, "\"ab\"\n"}, {true, "\"ab\"\n"}} {
		var b strings.Builder
		if err := v.Write(&b, tt.asJSON); err != nil || b.String() != tt.want {
			t.Errorf("Write(json %v) = %q, %v; want %q", tt.asJSON, b.String(), err, tt.want)
		}
	}
	d, err := EvalFEEL(`date("2024-01-31")`, nil)
	if err != nil {
		t.Fatal(err)
	}
	var text, js strings.Builder
	if d.Write(&text, false) != nil || d.Write(&js, true) != nil || text.String() != "@\"2024-01-31\"\n" || js.String() != "\"2024-01-31\"\n" {
		t.Errorf("a date: text %q, JSON %q", text.String(), js.String())
	}
}
