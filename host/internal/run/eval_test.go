package run

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/expr-lang/expr"
)

// TestEvalAsWithoutEnv: an expression step's expression, compiled for a
// map environment with names left free (eval), gives what it gives
// compiled with no environment, value and error alike: names missing
// and present, nil members, $env, builtins, closures, every operator
// kind.
func TestEvalAsWithoutEnv(t *testing.T) {
	env := func() map[string]any {
		return map[string]any{
			"input": map[string]any{"topic": "t", "n": 3, "list": []any{1, 2, 3}, "nil": nil},
			"vars":  map[string]any{"s1": "answer", "n2": 2, "f": 1.5, "ok": true},
			"n2":    2, "f": 1.5, "ok": true, "s1": "answer", "token": map[string]any(nil), "task": "task-1",
		}
	}
	r := &Runner{compiled: &Compiled{}}
	for _, src := range []string{
		"1", "n2 * 2", "n2 + f", "f / 0", "n2 / 0", "n2 % 0", "missing", "missing == nil", "missing + 1",
		"vars.s1", "vars.nope", "vars.nope.deeper", "vars?.nope?.deeper", "token.x", "input.list[1]", "input.list[9]",
		"len(vars)", "len(missing)", "sort(keys(input))", "$env.n2", "$env", "s1 + '!'", "s1 contains 'ans'", "'a' in ['a']",
		"n2 in input.list", "ok ? 'y' : 'n'", "!ok", "missing ?? 'dflt'", "filter(input.list, # > 1)",
		"map(input.list, # * n2)", "{'v': vars, 'n': 3}", "[n2, f, s1]", "input.nil", "upper(s1)", "now() != nil",
		"n2 == 2.0", "n2 > 'x'", "let x = n2; x * x", "input.n ^ 2", "s1[0:3]", "int('12') + n2", "foo(1)", "vars.s1.x",
		"1 +", "ok and missing", "missing or ok", "string(n2)",
	} {
		want, wantErr := func() (any, error) {
			p, err := expr.Compile(src)
			if err != nil {
				return nil, err
			}
			return expr.Run(p, env())
		}()
		got, err := r.eval(src, env())
		if src == "now() != nil" || src == "$env" {
			want, got = fmt.Sprint(want != nil), fmt.Sprint(got != nil)
		}
		if (err == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %#v, %v; without an environment %#v, %v", src, got, err, want, wantErr)
		}
	}
}
