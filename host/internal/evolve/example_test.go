package evolve_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

func exampleStrategies() (base, cand *strategy.Strategy) {
	created := time.Date(2026, 2, 9, 10, 30, 0, 0, time.UTC)
	base = &strategy.Strategy{
		Metadata:   strategy.Metadata{Name: "email-handler", Version: "2.0.0", CreatedAt: created},
		Parameters: map[string]float64{"user_confirmation": 0.60, "autonomy_level": 0.70},
		Constraints: strategy.Constraints{
			MustConfirmBefore: []string{"sending_emails_to_clients"},
			NeverExecute:      []string{"change_account_settings"},
		},
		Evolution: strategy.Evolution{MaxParameterDelta: 0.10, Cooldown: 7 * 24 * time.Hour, BranchType: strategy.Production},
	}
	cand = base.Clone()
	cand.Metadata.Version, cand.Metadata.ParentVersion = "2.1.0", "2.0.0"
	cand.Metadata.CreatedAt = created.Add(10 * 24 * time.Hour)
	cand.Parameters["user_confirmation"] = 0.52
	return base, cand
}

// exampleTasks: 200 tasks; the candidate loses 3 and wins 15, asks for
// fewer confirmations and uses fewer tokens.
func exampleTasks() []sdk.TaskOutcome {
	var tasks []sdk.TaskOutcome
	for i := range 200 {
		b := sdk.TaskResult{Success: i%10 < 7, Confirmations: 2, Steps: 8, Tokens: 1200 + i%50, CostUSD: 0.004, Confidence: 1}
		c := b
		c.Confirmations, c.Tokens = 1, b.Tokens-40+i%7
		switch {
		case i < 3 && b.Success:
			c.Success = false
		case i >= 100 && i < 160 && !b.Success && i%4 != 0:
			c.Success = true
		}
		tasks = append(tasks, sdk.TaskOutcome{Task: fmt.Sprintf("task-%03d", i), Baseline: b, Candidate: c})
	}
	return tasks
}

func ExampleCompare() {
	base, cand := exampleStrategies()
	cmp := evolve.Compare(base, cand, exampleTasks(), 1.0, evolve.Options{Seed: 1})
	for _, m := range cmp.Metrics {
		fmt.Printf("%-19s %-10s %9.4f [%9.4f, %9.4f] p=%.4f n=%d\n", m.Name, m.Kind, m.Effect, m.CILow, m.CIHigh, m.P, m.N)
	}
	regressed, improved := evolve.Flips(cmp.Tasks)
	fmt.Println("regressed:", regressed)
	fmt.Println("improved:", len(improved))
	fmt.Println("diff:", cmp.Diff.Parameters)
	// Output:
	// success_rate        binary        0.0600 [   0.0200,    0.1000] p=0.0075 n=200
	// violation_free_rate binary        0.0000 [   0.0000,    0.0000] p=1.0000 n=200
	// reward              continuous    0.0000 [   0.0000,    0.0000] p=1.0000 n=200
	// violations          continuous    0.0000 [   0.0000,    0.0000] p=1.0000 n=200
	// confirmations       continuous   -1.0000 [  -1.0000,   -1.0000] p=0.0010 n=200
	// steps               continuous    0.0000 [   0.0000,    0.0000] p=1.0000 n=200
	// tokens              continuous  -37.0300 [ -37.3050,  -36.7499] p=0.0010 n=200
	// cost_usd            continuous    0.0000 [   0.0000,    0.0000] p=1.0000 n=200
	// regressed: [task-000 task-001 task-002]
	// improved: 15
	// diff: [{user_confirmation 0.6 0.52}]
}

func ExampleEvaluate() {
	base, cand := exampleStrategies()
	opts := evolve.Options{Seed: 1}
	cmp := evolve.Compare(base, cand, exampleTasks(), 1.0, opts)

	var chain []evolve.GateSpec
	for _, g := range []struct {
		use    string
		config map[string]any
	}{
		{"delta-bound", nil},
		{"cooldown", nil},
		{"constraints", nil},
		{"no-regression", map[string]any{"metric": "success_rate", "tolerance": 0.02}},
		{"improvement", map[string]any{"metric": "tokens", "min_effect": 10}},
		{"min-fidelity", nil},
		{"human-review", map[string]any{"when": "on-change"}},
	} {
		gate, err := evolve.Builtin(g.use, opts)
		if err != nil {
			fmt.Println(err)
			return
		}
		chain = append(chain, evolve.GateSpec{Name: g.use, Gate: gate, Config: g.config})
	}
	r := evolve.Evaluate(context.Background(), cmp, chain)
	fmt.Print(r)
	fmt.Println("exit code", r.ExitCode())
	// Output:
	// review
	//   delta-bound: pass: 1 parameter change within max_parameter_delta 0.1 (largest: user_confirmation -0.08)
	//   cooldown: pass: candidate created 2026-02-19T10:30:00Z, not before the cooldown ended at 2026-02-16T10:30:00Z (baseline created 2026-02-09T10:30:00Z + cooldown 7d)
	//   constraints: pass: hard constraints kept (1 never_execute, 1 must_confirm_before) and no violations in 200 candidate replays
	//   no-regression: pass: success_rate +0.060 [0.020, 0.100], p=0.008, n=200: drop within tolerance 0.020 (CI upper bound of the drop -0.020)
	//   improvement: pass: tokens -37.03 [-37.30, -36.75], p<0.001, n=200: fall above min_effect 10.00 (CI lower bound of the fall 36.75)
	//   min-fidelity: pass: fidelity 1.000 meets min 1.000
	//   human-review: review: when = on-change: the candidate makes 1 parameter change
	// exit code 3
}

func ExampleMcNemar() {
	// 10 tasks passed under the baseline and fail under the candidate; 2
	// went the other way.
	fmt.Printf("p = %.4f\n", evolve.McNemar(10, 2))
	// Output: p = 0.0386
}

func ExampleExitCode() {
	for _, r := range []sdk.Ruling{sdk.Pass, sdk.Fail, sdk.Review} {
		fmt.Println(r, evolve.ExitCode(r))
	}
	// Output:
	// pass 0
	// fail 1
	// review 3
}
