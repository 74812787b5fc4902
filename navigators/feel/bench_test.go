package feel_test

import (
	"testing"

	"github.com/sextant-dev/sextant/navigators/feel"
)

// BenchmarkFEEL evaluates a typical gateway condition, parsed once.
func BenchmarkFEEL(b *testing.B) {
	x := feel.MustParse(`amount > 1000 and status in ["new","open"]`)
	vars := map[string]any{"amount": 1500, "status": "open", "input": map[string]any{}, "vars": map[string]any{}}
	b.ReportAllocs()
	for b.Loop() {
		v, err := x.Eval(vars)
		if err != nil || v != true {
			b.Fatalf("got %v, %v", v, err)
		}
	}
}

// BenchmarkFEELParse parses the same condition.
func BenchmarkFEELParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := feel.Parse(`amount > 1000 and status in ["new","open"]`); err != nil {
			b.Fatal(err)
		}
	}
}
