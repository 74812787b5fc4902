package feel_test

import (
	"fmt"

	"github.com/sextant-dev/sextant/navigators/feel"
)

func Example() {
	x, err := feel.Parse(`amount > 1000 and status in ["new", "open"]`)
	if err != nil {
		panic(err)
	}
	v, _ := x.Eval(map[string]any{"amount": 1500, "status": "open"})
	fmt.Println(v)
	// Output: true
}

func ExampleParse_error() {
	_, err := feel.Parse(`(amount + 1))`)
	fmt.Println(err)
	// Output: 1:13: unexpected ")"
}

func ExampleExpr_Eval_decimal() {
	v, _ := feel.MustParse(`0.1 + 0.2`).Eval(nil)
	eq, _ := feel.MustParse(`0.1 + 0.2 = 0.3`).Eval(nil)
	fmt.Println(v, feel.Bool(eq))
	// Output: 0.3 true
}

func ExampleMarshalJSON() {
	v, _ := feel.MustParse(`{total: sum(for i in items return i.price), due: date("2024-01-31") + duration("P1M"), wait: duration("PT90M")}`).
		Eval(map[string]any{"items": []any{map[string]any{"price": 9.99}, map[string]any{"price": 0.01}}})
	out, _ := feel.MarshalJSON(v)
	fmt.Println(string(out))
	// Output: {"total":10,"due":"2024-02-29","wait":"PT1H30M"}
}

func ExampleParseUnaryTests() {
	u, _ := feel.ParseUnaryTests(`< 18, [65..120]`)
	for _, age := range []int{10, 30, 70} {
		m, _ := u.Match(age, nil)
		fmt.Println(age, m)
	}
	// Output:
	// 10 true
	// 30 false
	// 70 true
}

func ExampleWithNames() {
	x := feel.MustParse(`Order Total * 2`, feel.WithNames("Order Total"))
	v, _ := x.Eval(map[string]any{"Order Total": 21})
	fmt.Println(v)
	// Output: 42
}

// layered looks names up in the process variables first, then in the
// fixed roots: how a navigator can evaluate a condition over input, vars
// and strategy without building a map per evaluation.
type layered struct {
	vars  map[string]any
	roots map[string]any
}

func (l layered) Lookup(name string) (any, bool) {
	if v, ok := l.vars[name]; ok {
		return v, true
	}
	v, ok := l.roots[name]
	return v, ok
}

func ExampleExpr_EvalScope() {
	vars := map[string]any{"risk": 0.7}
	s := layered{vars: vars, roots: map[string]any{
		"vars":     vars,
		"input":    map[string]any{"amount": 1200},
		"strategy": map[string]any{"parameters": map[string]any{"user_confirmation": 0.6}},
	}}
	x := feel.MustParse(`risk > strategy.parameters.user_confirmation and input.amount >= 1000`)
	v, _ := x.EvalScope(s)
	fmt.Println(v, x.Names())
	// Output: true [input risk strategy]
}
