package evolve

import (
	"context"
	"fmt"
	"strings"

	"github.com/sextant-dev/sextant/sdk"
)

// GateSpec is one gate of a chain: a built-in gate or any sdk.Gate (a
// plugin client), with its [[gates]] keys.
type GateSpec struct {
	// Name is how reports call the gate: the pipeline's use = "…". Empty
	// means the gate's Describe().Name.
	Name string
	Gate sdk.Gate
	// Config is the gate's block without use; the gate sees it as
	// Comparison.Config.
	Config map[string]any
}

// GateResult is one gate's verdict in a chain.
type GateResult struct {
	Name    string             `json:"name"`
	Ruling  sdk.Ruling         `json:"ruling"`
	Reasons []string           `json:"reasons,omitempty"`
	Metrics map[string]float64 `json:"metrics,omitempty"`
	// Error is set when the gate could not judge (an error, a panic, no or
	// an unknown ruling); the gate then counts as failed and Reasons holds
	// the same text.
	Error string `json:"error,omitempty"`
}

// Result is the outcome of a gate chain: the combined ruling and every
// gate's verdict in declaration order. It holds no durations or times, so
// the same comparison and gates give an equal Result on every run.
type Result struct {
	Ruling sdk.Ruling   `json:"ruling"`
	Gates  []GateResult `json:"gates"`
}

// Evaluate runs every gate of the chain against cmp, in order, each with
// its own Config, and combines their rulings: fail if any gate fails, else
// review if any asks for review, else pass (an empty chain passes). Every
// gate runs even after one has failed, so the report shows all of them.
//
// A gate that returns an error, panics, returns no verdict or a ruling
// other than pass, review or fail counts as failed, with that as its
// reason. Once ctx is done the remaining gates are not called and fail
// with ctx's error. Gates get a shallow copy of cmp and must not modify
// what it points to.
func Evaluate(ctx context.Context, cmp *sdk.Comparison, gates []GateSpec) Result {
	r := Result{Ruling: sdk.Pass, Gates: make([]GateResult, 0, len(gates))}
	for _, spec := range gates {
		gr := runGate(ctx, cmp, spec)
		r.Ruling = combine(r.Ruling, gr.Ruling)
		r.Gates = append(r.Gates, gr)
	}
	return r
}

func runGate(ctx context.Context, cmp *sdk.Comparison, spec GateSpec) (gr GateResult) {
	gr.Name = spec.Name
	if gr.Name == "" && spec.Gate != nil {
		gr.Name = spec.Gate.Describe().Name
	}
	failed := func(err error) GateResult {
		return GateResult{Name: gr.Name, Ruling: sdk.Fail, Reasons: []string{err.Error()}, Error: err.Error()}
	}
	if spec.Gate == nil {
		return failed(fmt.Errorf("no gate to run"))
	}
	if err := ctx.Err(); err != nil {
		return failed(err)
	}
	defer func() {
		if p := recover(); p != nil {
			gr = failed(fmt.Errorf("gate panicked: %v", p))
		}
	}()
	c := *cmp
	c.Config = spec.Config
	v, err := spec.Gate.Check(ctx, &c)
	switch {
	case err != nil:
		return failed(err)
	case v == nil:
		return failed(fmt.Errorf("gate returned no verdict"))
	case v.Ruling != sdk.Pass && v.Ruling != sdk.Review && v.Ruling != sdk.Fail:
		return failed(fmt.Errorf("gate returned unknown ruling %q (want pass, review or fail)", v.Ruling))
	}
	gr.Ruling, gr.Reasons, gr.Metrics = v.Ruling, v.Reasons, v.Metrics
	return gr
}

// combine returns the more severe of two rulings: fail over review over
// pass.
func combine(a, b sdk.Ruling) sdk.Ruling {
	if severity(b) > severity(a) {
		return b
	}
	return a
}

func severity(r sdk.Ruling) int {
	switch r {
	case sdk.Pass:
		return 0
	case sdk.Review:
		return 1
	}
	return 2 // fail, and anything unknown
}

// The exit codes of DESIGN §7 that a ruling maps to.
const (
	ExitPass   = 0 // all gates pass
	ExitFail   = 1 // a gate failed
	ExitReview = 3 // waiting for a person
)

// ExitCode is the one mapping from a chain's ruling to the process exit
// code (DESIGN §7): pass 0, fail 1, review 3. A ruling it does not know
// fails closed, as 1. Every command that ends with a verdict (gate,
// replay, merge, evolve) exits through it.
func ExitCode(r sdk.Ruling) int {
	switch r {
	case sdk.Pass:
		return ExitPass
	case sdk.Review:
		return ExitReview
	}
	return ExitFail
}

// ExitCode is ExitCode(r.Ruling).
func (r Result) ExitCode() int { return ExitCode(r.Ruling) }

// String renders r for people: the ruling, then one line per reason under
// its gate's name.
//
//	fail
//	  no-regression: fail: success_rate -0.060 [-0.110, -0.015], …
func (r Result) String() string {
	var b strings.Builder
	b.WriteString(string(r.Ruling))
	b.WriteByte('\n')
	for _, g := range r.Gates {
		if len(g.Reasons) == 0 {
			fmt.Fprintf(&b, "  %s: %s\n", g.Name, g.Ruling)
		}
		for _, reason := range g.Reasons {
			fmt.Fprintf(&b, "  %s: %s: %s\n", g.Name, g.Ruling, reason)
		}
	}
	return b.String()
}
