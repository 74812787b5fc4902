package report

import (
	"math/rand/v2"
	"slices"

	"github.com/sextant-dev/sextant/sdk"
)

// passingReport is a candidate that improves on its baseline and passes
// every gate.
func passingReport() *Report {
	return &Report{
		Pipeline:  "support-triage",
		Baseline:  Strategy{Name: "triage", Version: "1.2.0", Hash: "9f2c1a0b7e3d5c4b3a291807f6e5d4c3b2a19080f7e6d5c4b3a2918070f6e5d4"},
		Candidate: Strategy{Name: "triage", Version: "1.3.0", Hash: "1a0b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9"},
		Tasks:     120,
		Fidelity:  1,
		// Every self-replay reproduced: no reason beyond the gates.
		SelfReplays: 120,
		MinFidelity: 1,
		Metrics: []sdk.Metric{
			{Name: "success", Kind: "binary", Baseline: 0.8166666666666667, Candidate: 0.875, Effect: 0.05833333333333335,
				CILow: 0.016666666666666666, CIHigh: 0.1, Confidence: 0.95, P: 0.0078125, N: 120, HigherIsBetter: true},
			{Name: "tokens", Kind: "continuous", Baseline: 1520.4, Candidate: 1488.25, Effect: -32.15000000000009,
				CILow: -55.5, CIHigh: -9.75, Confidence: 0.95, P: 0.0004, N: 120},
			{Name: "cost_usd", Kind: "continuous", Baseline: 0.012345, Candidate: 0.0121, Effect: -0.000245,
				CILow: -0.0006, CIHigh: 0.00011, Confidence: 0.95, P: 0.31, N: 120},
		},
		Gates: []GateResult{
			{Name: "delta-bound", Ruling: sdk.Pass, Reasons: []string{"every parameter moved at most 0.1 (limit 0.1)"},
				Metrics: map[string]float64{"max_delta": 0.1}},
			{Name: "no-regression", Ruling: sdk.Pass, Reasons: []string{"success CI lower bound +1.7pp is above the tolerance -2.0pp"}},
			{Name: "min-fidelity", Ruling: sdk.Pass, Reasons: []string{"fidelity 100.0% is at least 99.0%"},
				Metrics: map[string]float64{"fidelity": 1, "min": 0.99}},
		},
		Ruling:   sdk.Pass,
		ExitCode: 0,
		Flipped: []Flip{
			{Task: "t-031", Metric: "success", From: "fail", To: "pass"},
			{Task: "t-007", Metric: "success", From: "fail", To: "pass"},
			{Task: "t-112", Metric: "success", From: "fail", To: "pass"},
		},
	}
}

// failingReport is a candidate with regressions, a failing gate, a gate
// asking for review, divergences and text that needs escaping.
func failingReport() *Report {
	r := &Report{
		Pipeline:  "support-triage",
		Baseline:  Strategy{Name: "triage", Version: "1.2.0", Hash: "9f2c1a0b7e3d5c4b3a291807f6e5d4c3b2a19080f7e6d5c4b3a2918070f6e5d4"},
		Candidate: Strategy{Name: "triage", Version: "1.3.0-rc.1", Hash: "77aa00bb11cc22dd33ee44ff5566778899aabbccddeeff00112233445566778899"},
		Tasks:     200,
		Fidelity:  0.985,
		// Three of 200 self-replays diverged, below min_fidelity.
		SelfReplays: 200,
		MinFidelity: 0.99,
		Reasons: []string{
			"fidelity 98.5% is below min_fidelity 99.0%: 3 of 200 self-replays left their recorded trace",
			`task t-044 at step route|escalate: expected gateway took flow <urgent>, got gateway took flow <normal> & stopped`,
			`task t-101 at step reply: expected step completed, got step timed out`,
			"task t-190 at step classify: expected call provider \"default\" model gpt-x hash 4f1e, got call provider \"default\" model gpt-y hash 9a0c",
		},
		Divergences: []Divergence{
			{Task: "t-190", Node: "classify", Expected: `call provider "default" model gpt-x hash 4f1e`, Got: `call provider "default" model gpt-y hash 9a0c`},
			{Task: "t-044", Node: "route|escalate", Expected: "gateway took flow <urgent>", Got: "gateway took flow <normal> & stopped"},
			{Task: "t-101", Node: "reply", Expected: "step completed", Got: "step timed out\nafter 30s"},
		},
		Metrics: []sdk.Metric{
			{Name: "success", Kind: "binary", Baseline: 0.86, Candidate: 0.79, Effect: -0.07000000000000006,
				CILow: -0.115, CIHigh: -0.025, Confidence: 0.95, P: 0.00021, N: 200, HigherIsBetter: true},
			{Name: "reward", Kind: "continuous", Baseline: 0.7123, Candidate: 0.7098, Effect: -0.0025,
				CILow: -0.021, CIHigh: 0.016, Confidence: 0.95, P: 0.78, N: 200, HigherIsBetter: true},
			{Name: "violations", Kind: "continuous", Baseline: 0, Candidate: 0.015, Effect: 0.015,
				CILow: 0, CIHigh: 0.035, Confidence: 0.95, P: 0.125, N: 200},
			{Name: "cost_usd", Kind: "continuous", Baseline: 2.5e-5, Candidate: 1.9e-5, Effect: -6e-6,
				CILow: -8e-6, CIHigh: -4e-6, Confidence: 0.95, P: 1e-9, N: 200},
		},
		Gates: []GateResult{
			{Name: "delta-bound", Ruling: sdk.Pass, Reasons: []string{"every parameter moved at most 0.05 (limit 0.1)"}},
			{Name: "constraints", Ruling: sdk.Fail, Reasons: []string{
				"3 hard-constraint violations (want 0): never_promise_refund | t-012, t-077, t-150",
				"constraint <no_pii> broken by t-150 & t-077",
			}, Metrics: map[string]float64{"violations": 3, "tasks": 200}},
			{Name: "no-regression", Ruling: sdk.Fail, Reasons: []string{"success dropped -7.0pp, CI [-11.5pp, -2.5pp] is below the tolerance -2.0pp"},
				Metrics: map[string]float64{"ci_high": -0.025, "tolerance": -0.02, "effect": -0.07000000000000006}},
			{Name: "human-review", Ruling: sdk.Review, Reasons: []string{"playbook changes need a person: 2 ADD, 1 REMOVE"}},
			{Name: "min-fidelity", Ruling: sdk.Pass, Reasons: []string{"fidelity 98.5% is at least 95.0%"}},
		},
		Ruling:   sdk.Fail,
		ExitCode: 1,
	}
	// Enough regressions and flips to exercise every cap.
	for i := range 26 {
		task := taskID(i*7 + 3)
		r.Regressed = append(r.Regressed, task)
		r.Flipped = append(r.Flipped, Flip{Task: task, Metric: "success", From: "pass", To: "fail"})
		if i%5 == 0 {
			r.Flipped = append(r.Flipped, Flip{Task: task, Metric: "violations", From: "0", To: "1"})
		}
	}
	for i := range 4 {
		r.Flipped = append(r.Flipped, Flip{Task: taskID(i*7 + 5), Metric: "success", From: "fail", To: "pass"})
	}
	r.Matrix = failingMatrix()
	return r
}

// failingMatrix is failingReport's comparison matrix: its regressed and
// improved tasks, tasks whose output differs, one replay that failed with
// an error that needs escaping, and unchanged tasks.
func failingMatrix() []TaskRow {
	pass := TaskCell{Pass: true, Score: 1, CostUSD: 0.0021, LatencyMS: 840, Output: "9f86d081884c7d65"}
	fail := TaskCell{Score: -0.5, CostUSD: 0.0019, LatencyMS: 1250, Output: "60303ae22b998861"}
	var rows []TaskRow
	for i := range 26 {
		rows = append(rows, TaskRow{Task: taskID(i*7 + 3), Baseline: pass, Candidate: fail, OutputDiffers: i%2 == 0})
	}
	for i := range 4 {
		rows = append(rows, TaskRow{Task: taskID(i*7 + 5), Baseline: fail, Candidate: pass, OutputDiffers: true})
	}
	broken := fail
	broken.Error, broken.CostUSD, broken.LatencyMS = `step "reply": provider <default> timed out & gave up`, 0.000004, 30000
	rows = append(rows,
		TaskRow{Task: "t-190", Baseline: pass, Candidate: pass, OutputDiffers: true},
		TaskRow{Task: "t-191", Baseline: fail, Candidate: broken},
		TaskRow{Task: "t-192", Baseline: pass, Candidate: pass},
		TaskRow{Task: "t-193", Baseline: fail, Candidate: fail})
	for i := range rows {
		if !rows[i].OutputDiffers {
			rows[i].Candidate.Output = rows[i].Baseline.Output // same output, same digest
		} else if rows[i].Candidate.Output == rows[i].Baseline.Output {
			rows[i].Candidate.Output = "2c26b46b68ffc68f"
		}
	}
	return rows
}

func taskID(i int) string {
	const digits = "0123456789"
	return "t-" + string([]byte{digits[i/100%10], digits[i/10%10], digits[i%10]})
}

// shuffled returns a copy of r with its task lists in another order and its
// gate metric maps rebuilt, as concurrent replay workers might fill them.
func shuffled(r *Report, seed uint64) *Report {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	c := *r
	c.Divergences = slices.Clone(r.Divergences)
	c.Flipped = slices.Clone(r.Flipped)
	c.Regressed = slices.Clone(r.Regressed)
	c.Matrix = slices.Clone(r.Matrix)
	rng.Shuffle(len(c.Matrix), func(i, j int) { c.Matrix[i], c.Matrix[j] = c.Matrix[j], c.Matrix[i] })
	rng.Shuffle(len(c.Divergences), func(i, j int) { c.Divergences[i], c.Divergences[j] = c.Divergences[j], c.Divergences[i] })
	rng.Shuffle(len(c.Flipped), func(i, j int) { c.Flipped[i], c.Flipped[j] = c.Flipped[j], c.Flipped[i] })
	rng.Shuffle(len(c.Regressed), func(i, j int) { c.Regressed[i], c.Regressed[j] = c.Regressed[j], c.Regressed[i] })
	c.Gates = make([]GateResult, len(r.Gates))
	for i, g := range r.Gates {
		keys := sortedKeys(g.Metrics)
		rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		var m map[string]float64
		if g.Metrics != nil {
			m = make(map[string]float64, len(keys))
		}
		for _, k := range keys {
			m[k] = g.Metrics[k]
		}
		g.Metrics = m
		c.Gates[i] = g
	}
	return &c
}
