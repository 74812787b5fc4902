package sdk_test

import (
	"context"
	"fmt"

	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/sdktest"
)

// MinEffect is a gate that fails candidates whose success rate fell.
type MinEffect struct{}

func (MinEffect) Describe() sdk.Info {
	return sdk.Info{Name: "min-effect", Kind: sdk.KindGate, Version: "1.0.0", API: sdk.APIVersion}
}

func (MinEffect) Check(_ context.Context, c *sdk.Comparison) (*sdk.Verdict, error) {
	for _, m := range c.Metrics {
		if m.Name == "success_rate" && m.CIHigh < 0 {
			return &sdk.Verdict{Ruling: sdk.Fail, Reasons: []string{fmt.Sprintf("success_rate fell %.2f", -m.Effect)}}, nil
		}
	}
	return &sdk.Verdict{Ruling: sdk.Pass}, nil
}

// A plugin registers itself in init and serves from main; the same source
// builds natively and as a wasip1 c-shared module.
func ExampleRegister() {
	// In the plugin's main package:
	//
	//	func init() { sdk.Register(MinEffect{}) }
	//	func main() { sdk.Main() }
	fmt.Println(sdk.CheckInfo(MinEffect{}.Describe()))
	// Output: <nil>
}

// Serve turns a plugin into the wire handler every transport carries.
func ExampleServe() {
	h := sdk.Serve(MinEffect{})
	req, _ := sdk.EncodeRequest(sdk.MethodDescribe, struct{}{})
	var info sdk.Info
	_ = sdk.DecodeResponse(h.Handle(context.Background(), req), &info)
	fmt.Println(info.Name, info.Kind, info.API)
	// Output: min-effect gate 1
}

// sdktest.Wire pushes every call through the wire encoding, in-process.
func ExampleNewClient() {
	g := sdktest.Wire(MinEffect{})
	v, _ := g.Check(context.Background(), &sdk.Comparison{
		Metrics: []sdk.Metric{{Name: "success_rate", Effect: -0.1, CILow: -0.15, CIHigh: -0.05}},
	})
	fmt.Println(v.Ruling, v.Reasons)
	// Output: fail [success_rate fell 0.10]
}

// Invalid carries positioned problems across the wire.
func ExampleInvalid() {
	err := sdk.Invalid(
		sdk.Problem{File: "triage.bpmn", Line: 12, Element: "gw_confident", Message: "no outgoing sequence flow"},
		sdk.Problem{File: "triage.bpmn", Line: 30, Element: "act", Message: "unsupported element compensateEventDefinition"},
	)
	fmt.Println(err)
	// Output:
	// triage.bpmn:12: gw_confident: no outgoing sequence flow
	// triage.bpmn:30: act: unsupported element compensateEventDefinition
}

// Decision.Apply applies a navigator's delta exactly as the host does.
func ExampleDecision_Apply() {
	s := sdk.State{Tokens: []sdk.Token{{ID: "t1", Node: "classify", Status: sdk.Ready}}, Seq: 1}
	d := &sdk.Decision{Remove: []string{"t1"}, Add: []sdk.Token{{ID: "t2", Node: "act", Status: sdk.Ready}}, Seq: 2}
	s = d.Apply(s)
	fmt.Println(s.Tokens[0].ID, s.Tokens[0].Node, s.Seq)
	// Output: t2 act 2
}
