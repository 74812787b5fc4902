package feel_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/navigators/feel"
)

// FuzzParse checks that no input makes Parse, Eval or MarshalJSON panic,
// and that errors keep their position prefix.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`amount > 1000 and status in ["new","open"]`,
		`x in [1..10)`, `for i in 1..3 return i * partial[-1]`, `{a: 1, b: a}.b`,
		`date and time("2024-01-01T10:00:00@Europe/Paris") + duration("P1M")`,
		`some x in [1,2] satisfies x > 1`, `(function(a) a + 1)(2)`, `[1,2,3][item > 1]`,
		`string length(upper case("abc"))`, `"\u00e9" + "x"`, `@"P1Y2M"`, `not(true)`,
		`matches("abc", "[a-z-[b]]+")`, `replace("abc", "b", "$0$0")`, `1 instance of list<number>`,
		`range("[1..2]")`, `-`, `< 5, > 10`, `/* c */ 1 // d`,
	} {
		f.Add(s)
	}
	at := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 4096 {
			return
		}
		x, err := feel.Parse(src)
		if err != nil {
			var se *feel.SyntaxError
			if !errors.As(err, &se) || !strings.HasPrefix(err.Error(), se.Pos.String()+": ") {
				t.Fatalf("Parse(%q): error %q has no position", src, err)
			}
		} else {
			v, err := x.EvalAt(map[string]any{"x": 1, "l": []any{1, "a"}}, at)
			if err != nil && !errors.Is(err, feel.ErrLimit) {
				t.Fatalf("Eval(%q): %v", src, err)
			}
			_, _ = feel.MarshalJSON(v)
		}
		if u, err := feel.ParseUnaryTests(src); err == nil {
			if _, err := u.Match(3, nil); err != nil && !errors.Is(err, feel.ErrLimit) {
				t.Fatalf("Match(%q): %v", src, err)
			}
		}
	})
}
