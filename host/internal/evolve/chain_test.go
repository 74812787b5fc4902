package evolve

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/sdktest"
)

// fixedGate is a gate that answers with a fixed verdict or error, and counts
// its calls.
type fixedGate struct {
	name    string
	verdict *sdk.Verdict
	err     error
	panics  bool
	calls   *int
	saw     *map[string]any
}

var _ sdk.Gate = fixedGate{}

func (g fixedGate) Describe() sdk.Info {
	return sdk.Info{Name: g.name, Kind: sdk.KindGate, Version: "1.0.0", API: sdk.APIVersion}
}

func (g fixedGate) Check(_ context.Context, c *sdk.Comparison) (*sdk.Verdict, error) {
	if g.calls != nil {
		*g.calls++
	}
	if g.saw != nil {
		*g.saw = c.Config
	}
	if g.panics {
		panic("boom")
	}
	return g.verdict, g.err
}

func ruled(name string, r sdk.Ruling) fixedGate {
	return fixedGate{name: name, verdict: &sdk.Verdict{Ruling: r, Reasons: []string{string(r) + " because"}}}
}

func TestChainTruthTable(t *testing.T) {
	outcomes := map[string]fixedGate{
		"pass":   ruled("p", sdk.Pass),
		"review": ruled("r", sdk.Review),
		"fail":   ruled("f", sdk.Fail),
		"error":  {name: "e", err: errors.New("plugin crashed")},
	}
	for _, tc := range []struct {
		gates string
		want  sdk.Ruling
	}{
		{"", sdk.Pass},
		{"pass", sdk.Pass},
		{"review", sdk.Review},
		{"fail", sdk.Fail},
		{"error", sdk.Fail},
		{"pass pass", sdk.Pass},
		{"pass review", sdk.Review},
		{"review pass", sdk.Review},
		{"review review", sdk.Review},
		{"pass fail", sdk.Fail},
		{"fail pass", sdk.Fail},
		{"review fail", sdk.Fail},
		{"fail review", sdk.Fail},
		{"review error", sdk.Fail},
		{"error review pass", sdk.Fail},
		{"pass review pass", sdk.Review},
		{"pass pass pass", sdk.Pass},
		{"fail fail fail", sdk.Fail},
	} {
		t.Run(strings.ReplaceAll("gates "+tc.gates, " ", "_"), func(t *testing.T) {
			var specs []GateSpec
			calls := 0
			for _, o := range strings.Fields(tc.gates) {
				g := outcomes[o]
				g.calls = &calls
				specs = append(specs, GateSpec{Gate: g})
			}
			r := Evaluate(context.Background(), &sdk.Comparison{}, specs)
			if r.Ruling != tc.want {
				t.Errorf("ruling = %s, want %s", r.Ruling, tc.want)
			}
			if calls != len(specs) || len(r.Gates) != len(specs) {
				t.Errorf("%d of %d gates called, %d reported", calls, len(specs), len(r.Gates))
			}
			if got, want := r.ExitCode(), map[sdk.Ruling]int{sdk.Pass: 0, sdk.Fail: 1, sdk.Review: 3}[tc.want]; got != want {
				t.Errorf("exit code = %d, want %d", got, want)
			}
		})
	}
}

func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		r    sdk.Ruling
		want int
	}{{sdk.Pass, 0}, {sdk.Fail, 1}, {sdk.Review, 3}, {"", 1}, {"PASS", 1}} {
		if got := ExitCode(tc.r); got != tc.want {
			t.Errorf("ExitCode(%q) = %d, want %d", tc.r, got, tc.want)
		}
	}
}

func TestChainGateFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		gate sdk.Gate
		want GateResult
	}{
		{"error", fixedGate{name: "e", err: errors.New("dial plugin: connection refused")},
			GateResult{Name: "e", Ruling: sdk.Fail, Reasons: []string{"dial plugin: connection refused"}, Error: "dial plugin: connection refused"}},
		{"no verdict", fixedGate{name: "n"},
			GateResult{Name: "n", Ruling: sdk.Fail, Reasons: []string{"gate returned no verdict"}, Error: "gate returned no verdict"}},
		{"unknown ruling", fixedGate{name: "u", verdict: &sdk.Verdict{Ruling: "ok"}},
			GateResult{Name: "u", Ruling: sdk.Fail, Reasons: []string{`gate returned unknown ruling "ok" (want pass, review or fail)`}, Error: `gate returned unknown ruling "ok" (want pass, review or fail)`}},
		{"panic", fixedGate{name: "x", panics: true},
			GateResult{Name: "x", Ruling: sdk.Fail, Reasons: []string{"gate panicked: boom"}, Error: "gate panicked: boom"}},
		{"no gate", nil,
			GateResult{Ruling: sdk.Fail, Reasons: []string{"no gate to run"}, Error: "no gate to run"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Evaluate(context.Background(), &sdk.Comparison{}, []GateSpec{{Gate: tc.gate}, {Gate: ruled("after", sdk.Pass)}})
			if r.Ruling != sdk.Fail || len(r.Gates) != 2 {
				t.Fatalf("result = %+v", r)
			}
			if !reflect.DeepEqual(r.Gates[0], tc.want) {
				t.Errorf("gate result = %+v\nwant          %+v", r.Gates[0], tc.want)
			}
			if r.Gates[1].Ruling != sdk.Pass {
				t.Errorf("the gate after a failure did not run: %+v", r.Gates[1])
			}
		})
	}
}

func TestChainConfigAndOrder(t *testing.T) {
	var sawA, sawB map[string]any
	a := ruled("a", sdk.Pass)
	a.saw = &sawA
	b := ruled("b", sdk.Review)
	b.saw = &sawB
	cmp := &sdk.Comparison{Config: map[string]any{"caller": true}}
	r := Evaluate(context.Background(), cmp, []GateSpec{
		{Name: "first", Gate: a, Config: map[string]any{"k": 1}},
		{Gate: b},
	})
	if !reflect.DeepEqual(sawA, map[string]any{"k": 1}) || sawB != nil {
		t.Errorf("configs seen: %v, %v", sawA, sawB)
	}
	if len(cmp.Config) != 1 {
		t.Errorf("the caller's comparison changed: %v", cmp.Config)
	}
	if r.Gates[0].Name != "first" || r.Gates[1].Name != "b" {
		t.Errorf("names = %q, %q", r.Gates[0].Name, r.Gates[1].Name)
	}
	want := "review\n  first: pass: pass because\n  b: review: review because\n"
	if got := r.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestChainCancelled(t *testing.T) {
	calls := 0
	g := ruled("g", sdk.Pass)
	g.calls = &calls
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := Evaluate(ctx, &sdk.Comparison{}, []GateSpec{{Gate: g}, {Gate: g}})
	if calls != 0 || r.Ruling != sdk.Fail || len(r.Gates) != 2 || r.Gates[1].Error != "context canceled" {
		t.Errorf("calls %d, result %+v", calls, r)
	}
}

// TestChainPluginGate runs a gate through the wire encoding, as a plugin
// client, beside the built-in gates; its errors cross intact.
func TestChainPluginGate(t *testing.T) {
	b := baseline()
	cmp := Compare(b, candidate(b, t0, nil), outcomes(14, 4, 1, 1), 1, Options{})
	fidelity, _ := Builtin(GateMinFidelity, Options{})
	r := Evaluate(context.Background(), cmp, []GateSpec{
		{Name: "min-fidelity", Gate: fidelity},
		{Name: "wired", Gate: sdktest.Wire(ruled("wired", sdk.Review))},
		{Name: "broken", Gate: sdktest.Wire(fixedGate{name: "broken", err: errors.New("model unavailable")})},
	})
	if r.Ruling != sdk.Fail || r.Gates[0].Ruling != sdk.Pass || r.Gates[1].Ruling != sdk.Review {
		t.Fatalf("result = %+v", r)
	}
	if !strings.Contains(r.Gates[2].Error, "model unavailable") {
		t.Errorf("plugin error = %q", r.Gates[2].Error)
	}
}

// TestEvaluateDeterministic: the same comparison and chain give equal
// results, with nothing that varies between runs in the JSON.
func TestEvaluateDeterministic(t *testing.T) {
	b := baseline()
	c := candidate(b, t0.Add(24*time.Hour), map[string]float64{"response_speed": 0.9})
	var specs []GateSpec
	for _, name := range BuiltinNames() {
		g, err := Builtin(name, Options{Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, GateSpec{Name: name, Gate: g})
	}
	run := func() []byte {
		cmp := Compare(b, c, outcomes(60, 20, 12, 8), 1, Options{Seed: 5})
		out, err := json.Marshal(Evaluate(context.Background(), cmp, specs))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	first, second := run(), run()
	if string(first) != string(second) {
		t.Errorf("two runs differ:\n%s\n%s", first, second)
	}
	if strings.Contains(string(first), "duration") || strings.Contains(string(first), "elapsed") {
		t.Errorf("result carries timing: %s", first)
	}
}
