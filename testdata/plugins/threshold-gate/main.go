// Command threshold-gate is the proof gate: written with the SDK and built
// both as a native go-plugin binary and as a wasip1 module. It fails a
// candidate whose effect on a metric is below a threshold, and asks for
// review when the confidence interval straddles it.
package main

import (
	"context"
	"fmt"

	"github.com/sextant-dev/sextant/sdk"
)

// Threshold judges one metric's effect against a minimum.
type Threshold struct{}

var _ sdk.Gate = Threshold{}

// Describe implements sdk.Plugin.
func (Threshold) Describe() sdk.Info {
	return sdk.Info{Name: "threshold-gate", Kind: sdk.KindGate, Version: "0.2.0", API: sdk.APIVersion,
		Description: "fails a candidate whose metric effect is below min_effect",
		Config: []sdk.ConfigField{
			{Name: "metric", Type: "string", Default: "success_rate", Doc: "metric to judge"},
			{Name: "min_effect", Type: "number", Default: 0.0, Doc: "smallest acceptable effect (candidate - baseline)"},
		}}
}

// Check implements sdk.Gate.
func (Threshold) Check(_ context.Context, c *sdk.Comparison) (*sdk.Verdict, error) {
	metric, _ := c.Config["metric"].(string)
	if metric == "" {
		metric = "success_rate"
	}
	minEffect := 0.0
	switch v := c.Config["min_effect"].(type) {
	case float64:
		minEffect = v
	case nil:
	default:
		return nil, sdk.Errorf(sdk.CodeInvalid, "min_effect: want a number, got %T", v)
	}
	for _, m := range c.Metrics {
		if m.Name != metric {
			continue
		}
		v := &sdk.Verdict{Metrics: map[string]float64{"effect": m.Effect, "min_effect": minEffect}}
		switch {
		case m.CILow >= minEffect:
			v.Ruling = sdk.Pass
			v.Reasons = []string{fmt.Sprintf("%s effect %+.3f [%+.3f, %+.3f] is at least %+.3f", metric, m.Effect, m.CILow, m.CIHigh, minEffect)}
		case m.CIHigh < minEffect:
			v.Ruling = sdk.Fail
			v.Reasons = []string{fmt.Sprintf("%s effect %+.3f [%+.3f, %+.3f] is below %+.3f", metric, m.Effect, m.CILow, m.CIHigh, minEffect)}
		default:
			v.Ruling = sdk.Review
			v.Reasons = []string{fmt.Sprintf("%s effect %+.3f [%+.3f, %+.3f] straddles %+.3f", metric, m.Effect, m.CILow, m.CIHigh, minEffect)}
		}
		return v, nil
	}
	return nil, sdk.Errorf(sdk.CodeInvalid, "comparison has no metric %q", metric)
}

func init() { sdk.Register(Threshold{}) }

func main() { sdk.Main() }
