package dmn_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/navigators/dmn"
)

// benchModel is a decision table of 20 rules over a number and a string,
// with the given hit policy and aggregation.
func benchModel(tb testing.TB, hit, agg string) *dmn.Model {
	var rules strings.Builder
	for i := range 20 {
		cat := `"A","B"`
		if i%3 == 0 {
			cat = "-"
		}
		fmt.Fprintf(&rules, `<rule id="r%d"><inputEntry><text>[%d..%d)</text></inputEntry><inputEntry><text>%s</text></inputEntry><outputEntry><text>%d</text></outputEntry></rule>`,
			i, i*5, i*5+40, cat, i+1)
	}
	aggAttr := ""
	if agg != "" {
		aggAttr = ` aggregation="` + agg + `"`
	}
	src := `<definitions xmlns="https://www.omg.org/spec/DMN/20230324/MODEL/" name="bench" namespace="bench" id="bench">
  <inputData id="age" name="Age"><variable name="Age" typeRef="number"/></inputData>
  <inputData id="cat" name="Category"><variable name="Category" typeRef="string"/></inputData>
  <decision id="score" name="Score">
    <variable name="Score" typeRef="number"/>
    <informationRequirement><requiredInput href="#age"/></informationRequirement>
    <informationRequirement><requiredInput href="#cat"/></informationRequirement>
    <decisionTable hitPolicy="` + hit + `"` + aggAttr + `>
      <input><inputExpression typeRef="number"><text>Age</text></inputExpression></input>
      <input><inputExpression typeRef="string"><text>Category</text></inputExpression></input>
      <output name="score"/>` + rules.String() + `
    </decisionTable>
  </decision>
</definitions>`
	m, err := dmn.Parse("bench.dmn", []byte(src))
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// BenchmarkDecide evaluates a 20-rule decision table, FIRST and COLLECT
// SUM, with inputs that match rules in the middle of the table.
func BenchmarkDecide(b *testing.B) {
	for _, bc := range []struct{ name, hit, agg string }{
		{"FIRST", "FIRST", ""},
		{"COLLECT_SUM", "COLLECT", "SUM"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m := benchModel(b, bc.hit, bc.agg)
			inputs := []map[string]any{
				{"Age": 42, "Category": "B"},
				{"Age": 61, "Category": "C"},
				{"Age": 17, "Category": "A"},
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				v, err := m.Evaluate(ctx, "Score", inputs[i%len(inputs)])
				if err != nil || v == nil {
					b.Fatalf("Score = %v, %v", v, err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
		})
	}
}
