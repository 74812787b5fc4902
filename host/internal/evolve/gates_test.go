package evolve

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

type gateCase struct {
	name    string
	cmp     *sdk.Comparison
	config  map[string]any
	ruling  sdk.Ruling
	reasons []string
	err     string
}

func runGateCases(t *testing.T, gate string, cases []gateCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := check(gate, tc.cmp, tc.config)
			if got := errText(err); got != tc.err {
				t.Fatalf("error = %q\nwant    %q", got, tc.err)
			}
			if err != nil {
				return
			}
			if v.Ruling != tc.ruling {
				t.Errorf("ruling = %s, want %s (reasons %q)", v.Ruling, tc.ruling, v.Reasons)
			}
			if !slices.Equal(v.Reasons, tc.reasons) {
				t.Errorf("reasons:\n got %q\nwant %q", v.Reasons, tc.reasons)
			}
		})
	}
}

// comparison builds a comparison of b and c over 20 tasks.
func comparison(b, c *strategy.Strategy) *sdk.Comparison {
	return Compare(b, c, outcomes(14, 4, 1, 1), 1, Options{Seed: 1})
}

func TestDeltaBound(t *testing.T) {
	b := baseline()
	later := t0.Add(8 * 24 * time.Hour)
	loosened := candidate(b, later, map[string]float64{"response_speed": 0.45})
	loosened.Evolution.MaxParameterDelta = 0.5
	high := baseline()
	high.Parameters["response_speed"] = 0.95
	withNew := candidate(b, later, nil)
	withNew.Parameters["creativity"] = 0.5

	runGateCases(t, GateDeltaBound, []gateCase{
		{name: "no changes", cmp: comparison(b, candidate(b, later, nil)),
			ruling: sdk.Pass, reasons: []string{"no parameter changes"}},
		{name: "within the limit, one at it", cmp: comparison(b, candidate(b, later, map[string]float64{"response_speed": 0.80, "autonomy_level": 0.60})),
			ruling: sdk.Pass, reasons: []string{"2 parameter changes within max_parameter_delta 0.1 (largest: autonomy_level -0.1)"}},
		{name: "one change", cmp: comparison(b, candidate(b, later, map[string]float64{"response_speed": 0.80})),
			ruling: sdk.Pass, reasons: []string{"1 parameter change within max_parameter_delta 0.1 (largest: response_speed +0.05)"}},
		{name: "two over the limit", cmp: comparison(b, candidate(b, later, map[string]float64{"response_speed": 0.90, "user_confirmation": 0.45, "autonomy_level": 0.65})),
			ruling: sdk.Fail, reasons: []string{
				"response_speed 0.75 -> 0.9 (delta +0.15) exceeds max_parameter_delta 0.1",
				"user_confirmation 0.6 -> 0.45 (delta -0.15) exceeds max_parameter_delta 0.1",
			}},
		{name: "candidate cannot loosen its own limit", cmp: comparison(b, loosened),
			ruling: sdk.Fail, reasons: []string{"response_speed 0.75 -> 0.45 (delta -0.3) exceeds max_parameter_delta 0.1"}},
		{name: "outside the bounds", cmp: comparison(high, candidate(high, later, map[string]float64{"response_speed": 1.02})),
			ruling: sdk.Fail, reasons: []string{"response_speed 0.95 -> 1.02 is outside its bounds [0, 1]"}},
		{name: "a new parameter weighs its full value", cmp: comparison(b, withNew),
			ruling: sdk.Fail, reasons: []string{"creativity 0 -> 0.5 (delta +0.5) exceeds max_parameter_delta 0.1"}},
		{name: "no document", cmp: &sdk.Comparison{Diff: sdk.StrategyDiff{Parameters: []sdk.ParameterChange{{Name: "x", From: 0.1, To: 0.2}}}},
			err: "baseline document has no evolution.max_parameter_delta"},
		{name: "unknown key", cmp: comparison(b, b), config: map[string]any{"max": 0.2},
			err: `config: unknown key "max" (delta-bound takes no keys)`},
	})
}

func TestCooldown(t *testing.T) {
	b := baseline()
	shortened := candidate(b, t0.Add(24*time.Hour), nil)
	shortened.Evolution.Cooldown = 0
	noCooldown := baseline()
	noCooldown.Evolution.Cooldown = 0
	undated := candidate(b, time.Time{}, nil)

	runGateCases(t, GateCooldown, []gateCase{
		{name: "after", cmp: comparison(b, candidate(b, t0.Add(8*24*time.Hour), nil)),
			ruling: sdk.Pass, reasons: []string{"candidate created 2026-02-17T10:30:00Z, not before the cooldown ended at 2026-02-16T10:30:00Z (baseline created 2026-02-09T10:30:00Z + cooldown 7d)"}},
		{name: "exactly at the end", cmp: comparison(b, candidate(b, t0.Add(7*24*time.Hour), nil)),
			ruling: sdk.Pass, reasons: []string{"candidate created 2026-02-16T10:30:00Z, not before the cooldown ended at 2026-02-16T10:30:00Z (baseline created 2026-02-09T10:30:00Z + cooldown 7d)"}},
		{name: "too early", cmp: comparison(b, candidate(b, t0.Add(24*time.Hour), nil)),
			ruling: sdk.Fail, reasons: []string{"candidate created 2026-02-10T10:30:00Z, before the cooldown ends at 2026-02-16T10:30:00Z (baseline created 2026-02-09T10:30:00Z + cooldown 7d)"}},
		{name: "candidate cannot shorten the baseline's cooldown", cmp: comparison(b, shortened),
			ruling: sdk.Fail, reasons: []string{"candidate created 2026-02-10T10:30:00Z, before the cooldown ends at 2026-02-16T10:30:00Z (baseline created 2026-02-09T10:30:00Z + cooldown 7d)"}},
		{name: "no cooldown", cmp: comparison(noCooldown, undated),
			ruling: sdk.Pass, reasons: []string{"the baseline has no cooldown (evolution.cooldown = 0s)"}},
		{name: "undated candidate", cmp: comparison(b, undated),
			err: "candidate document has no metadata.created_at"},
		{name: "no document", cmp: &sdk.Comparison{},
			err: "baseline document has no evolution.cooldown"},
	})
}

func TestConstraints(t *testing.T) {
	b := baseline()
	later := t0.Add(8 * 24 * time.Hour)
	with := func(edit func(c *strategy.Constraints)) *strategy.Strategy {
		c := candidate(b, later, nil)
		edit(&c.Constraints)
		return c
	}
	dropped := with(func(c *strategy.Constraints) { c.NeverExecute = []string{"forward_to_external_addresses"} })
	stricter := with(func(c *strategy.Constraints) {
		c.MustConfirmBefore = []string{"sending_emails_to_clients"}
		c.NeverExecute = append(c.NeverExecute, "deleting_important_messages")
	})
	softened := with(func(c *strategy.Constraints) {
		c.MustConfirmBefore = []string{"deleting_important_messages"}
		c.PreferConfirmFor = append(c.PreferConfirmFor, "sending_emails_to_clients")
	})
	respelled := with(func(c *strategy.Constraints) {
		c.NeverExecute = []string{"Forward-To-External-Addresses", "change account settings"}
	})

	violating := comparison(b, candidate(b, later, nil))
	violating.Tasks[10].Candidate.Violations = 1
	violating.Tasks[5].Candidate.Violations = 2
	many := comparison(b, candidate(b, later, nil))
	for i := range 12 {
		many.Tasks[i].Candidate.Violations = 1
	}
	metricOnly := &sdk.Comparison{
		Baseline: violating.Baseline, Candidate: violating.Candidate,
		Metrics: []sdk.Metric{{Name: MetricViolations, Candidate: 0.05, N: 200}},
	}

	runGateCases(t, GateConstraints, []gateCase{
		{name: "kept", cmp: comparison(b, candidate(b, later, nil)),
			ruling: sdk.Pass, reasons: []string{"hard constraints kept (2 never_execute, 2 must_confirm_before) and no violations in 20 candidate replays"}},
		{name: "never_execute dropped", cmp: comparison(b, dropped),
			ruling: sdk.Fail, reasons: []string{`candidate no longer blocks "change_account_settings" (baseline constraints.never_execute)`}},
		{name: "confirm made a block", cmp: comparison(b, stricter),
			ruling: sdk.Pass, reasons: []string{"hard constraints kept (2 never_execute, 2 must_confirm_before) and no violations in 20 candidate replays"}},
		{name: "confirm softened to a preference", cmp: comparison(b, softened),
			ruling: sdk.Fail, reasons: []string{`candidate no longer confirms before "sending_emails_to_clients" (baseline constraints.must_confirm_before)`}},
		{name: "respelled actions still match", cmp: comparison(b, respelled),
			ruling: sdk.Pass, reasons: []string{"hard constraints kept (2 never_execute, 2 must_confirm_before) and no violations in 20 candidate replays"}},
		{name: "violations", cmp: violating,
			ruling: sdk.Fail, reasons: []string{"candidate replays broke constraints 3 times in 2 of 20 tasks: t005 (2), t010 (1)"}},
		{name: "many violations", cmp: many,
			ruling: sdk.Fail, reasons: []string{"candidate replays broke constraints 12 times in 12 of 20 tasks: t000 (1), t001 (1), t002 (1), t003 (1), t004 (1), t005 (1), t006 (1), t007 (1), t008 (1), t009 (1) and 2 more"}},
		{name: "violations metric without tasks", cmp: metricOnly,
			ruling: sdk.Fail, reasons: []string{"candidate replays average 0.05 constraint violations per task (n=200)"}},
		{name: "no document", cmp: &sdk.Comparison{},
			err: "baseline document has no constraints.never_execute"},
	})
}

// metricCmp is a comparison holding only the given metrics.
func metricCmp(ms ...sdk.Metric) *sdk.Comparison { return &sdk.Comparison{Metrics: ms} }

func rate(effect, lo, hi, p float64, n int) sdk.Metric {
	return sdk.Metric{Name: MetricSuccessRate, Kind: KindBinary, Effect: effect, CILow: lo, CIHigh: hi, P: p, N: n, Confidence: 0.95, HigherIsBetter: true}
}

func lowerBetter(name string, effect, lo, hi, p float64, n int) sdk.Metric {
	return sdk.Metric{Name: name, Kind: KindContinuous, Effect: effect, CILow: lo, CIHigh: hi, P: p, N: n, Confidence: 0.95}
}

func TestNoRegression(t *testing.T) {
	drop := metricCmp(rate(-0.06, -0.11, -0.015, 0.012, 200))
	flat := metricCmp(rate(-0.01, -0.04, 0.02, 0.6, 200), lowerBetter(MetricTokens, -100, -150, -50, 0.0005, 200))
	runGateCases(t, GateNoRegression, []gateCase{
		{name: "drop", cmp: drop,
			ruling: sdk.Fail, reasons: []string{"success_rate -0.060 [-0.110, -0.015], p=0.012, n=200: drop exceeds tolerance 0.000 (CI upper bound of the drop 0.110)"}},
		{name: "within tolerance", cmp: flat, config: map[string]any{"tolerance": 0.05},
			ruling: sdk.Pass, reasons: []string{"success_rate -0.010 [-0.040, 0.020], p=0.600, n=200: drop within tolerance 0.050 (CI upper bound of the drop 0.040)"}},
		{name: "at the tolerance", cmp: flat, config: map[string]any{"tolerance": 0.04},
			ruling: sdk.Pass, reasons: []string{"success_rate -0.010 [-0.040, 0.020], p=0.600, n=200: drop within tolerance 0.040 (CI upper bound of the drop 0.040)"}},
		{name: "zero tolerance demands no possible drop", cmp: flat,
			ruling: sdk.Fail, reasons: []string{"success_rate -0.010 [-0.040, 0.020], p=0.600, n=200: drop exceeds tolerance 0.000 (CI upper bound of the drop 0.040)"}},
		{name: "integer tolerance", cmp: flat, config: map[string]any{"tolerance": int64(1)},
			ruling: sdk.Pass, reasons: []string{"success_rate -0.010 [-0.040, 0.020], p=0.600, n=200: drop within tolerance 1.000 (CI upper bound of the drop 0.040)"}},
		{name: "identical", cmp: metricCmp(rate(0, 0, 0, 1, 200)),
			ruling: sdk.Pass, reasons: []string{"success_rate 0.000 [0.000, 0.000], p=1.000, n=200: drop within tolerance 0.000 (CI upper bound of the drop 0.000)"}},
		{name: "lower is better, falling", cmp: flat, config: map[string]any{"metric": "tokens"},
			ruling: sdk.Pass, reasons: []string{"tokens -100.00 [-150.00, -50.00], p<0.001, n=200: rise within tolerance 0.00 (CI upper bound of the rise -50.00)"}},
		{name: "lower is better, rising", cmp: metricCmp(lowerBetter(MetricTokens, 30, 10, 50, 0.004, 200)), config: map[string]any{"metric": "tokens", "tolerance": 20},
			ruling: sdk.Fail, reasons: []string{"tokens +30.00 [10.00, 50.00], p=0.004, n=200: rise exceeds tolerance 20.00 (CI upper bound of the rise 50.00)"}},
		{name: "no tasks", cmp: metricCmp(rate(0, 0, 0, 1, 0)),
			ruling: sdk.Fail, reasons: []string{"success_rate: no paired tasks (n=0), so a drop cannot be ruled out"}},
		{name: "unknown metric", cmp: flat, config: map[string]any{"metric": "sucess_rate"},
			err: `config: metric: "sucess_rate" is not in the comparison (did you mean "success_rate"?) (have success_rate, tokens)`},
		{name: "negative tolerance", cmp: flat, config: map[string]any{"tolerance": -0.1},
			err: "config: tolerance: -0.1 is negative (to demand a gain use the improvement gate)"},
		{name: "bad confidence", cmp: flat, config: map[string]any{"confidence": 1.5},
			err: "config: confidence: 1.5 is not in (0, 1)"},
		{name: "tolerance not a number", cmp: flat, config: map[string]any{"tolerance": "x"},
			err: `config: tolerance: want a number, got string "x"`},
		{name: "unknown key", cmp: flat, config: map[string]any{"tolerence": 0.1, "metrc": "x"},
			err: `config: unknown key "metrc" (did you mean "metric"?) (no-regression takes metric, confidence, tolerance); config: unknown key "tolerence" (did you mean "tolerance"?) (no-regression takes metric, confidence, tolerance)`},
		{name: "other confidence without tasks", cmp: drop, config: map[string]any{"confidence": 0.9},
			err: "metric success_rate was computed at confidence 0.95 and cannot be recomputed at 0.9 without its 200 tasks"},
	})
}

func TestImprovement(t *testing.T) {
	up := metricCmp(rate(0.05, 0.02, 0.08, 0.003, 200), lowerBetter(MetricCostUSD, -0.002, -0.003, -0.001, 0.0001, 200))
	runGateCases(t, GateImprovement, []gateCase{
		{name: "gain", cmp: up,
			ruling: sdk.Pass, reasons: []string{"success_rate +0.050 [0.020, 0.080], p=0.003, n=200: gain above min_effect 0.000 (CI lower bound of the gain 0.020)"}},
		{name: "gain below min_effect", cmp: up, config: map[string]any{"min_effect": 0.03},
			ruling: sdk.Fail, reasons: []string{"success_rate +0.050 [0.020, 0.080], p=0.003, n=200: gain not shown above min_effect 0.030 (CI lower bound of the gain 0.020)"}},
		{name: "straddles zero", cmp: metricCmp(rate(0.01, -0.02, 0.04, 0.5, 200)),
			ruling: sdk.Fail, reasons: []string{"success_rate +0.010 [-0.020, 0.040], p=0.500, n=200: gain not shown above min_effect 0.000 (CI lower bound of the gain -0.020)"}},
		{name: "lower bound at zero is not a gain", cmp: metricCmp(rate(0.02, 0, 0.04, 0.06, 200)),
			ruling: sdk.Fail, reasons: []string{"success_rate +0.020 [0.000, 0.040], p=0.060, n=200: gain not shown above min_effect 0.000 (CI lower bound of the gain 0.000)"}},
		{name: "lower is better", cmp: up, config: map[string]any{"metric": "cost_usd"},
			ruling: sdk.Pass, reasons: []string{"cost_usd -0.0020 [-0.0030, -0.0010], p<0.001, n=200: fall above min_effect 0.0000 (CI lower bound of the fall 0.0010)"}},
		{name: "no tasks", cmp: metricCmp(rate(0, 0, 0, 1, 0)),
			ruling: sdk.Fail, reasons: []string{"success_rate: no paired tasks (n=0), so no gain can be shown"}},
		{name: "min_effect not a number", cmp: up, config: map[string]any{"min_effect": true},
			err: "config: min_effect: want a number, got boolean true"},
	})
}

func TestMinFidelity(t *testing.T) {
	f := func(x float64) *sdk.Comparison { return &sdk.Comparison{Fidelity: x} }
	runGateCases(t, GateMinFidelity, []gateCase{
		{name: "perfect", cmp: f(1), ruling: sdk.Pass, reasons: []string{"fidelity 1.000 meets min 1.000"}},
		{name: "below the default", cmp: f(0.97), ruling: sdk.Fail, reasons: []string{"fidelity 0.970 is below min 1.000"}},
		{name: "lowered min", cmp: f(0.97), config: map[string]any{"min": 0.95}, ruling: sdk.Pass, reasons: []string{"fidelity 0.970 meets min 0.950"}},
		{name: "not a number", cmp: f(math.NaN()), ruling: sdk.Fail, reasons: []string{"fidelity NaN is below min 1.000"}},
		{name: "min out of range", cmp: f(1), config: map[string]any{"min": int64(2)}, err: "config: min: 2 is not in [0, 1]"},
	})
}

func TestBudget(t *testing.T) {
	b := baseline()
	later := t0.Add(8 * 24 * time.Hour)
	plain := comparison(b, candidate(b, later, nil))
	tight := baseline()
	tight.Evolution.MaxPlaybookTokens = 10
	selfTight := candidate(b, later, nil)
	selfTight.Evolution.MaxPlaybookTokens = 10
	loose := baseline()
	loose.Evolution.MaxPlaybookTokens = 1000
	empty := Compare(b, candidate(b, later, nil), nil, 1, Options{})

	runGateCases(t, GateBudget, []gateCase{
		{name: "no budget", cmp: plain,
			ruling: sdk.Pass, reasons: []string{"no budget set (max_playbook_tokens, max_cost_usd and both strategies' evolution.max_playbook_tokens are unset)"}},
		{name: "config tokens over", cmp: plain, config: map[string]any{"max_playbook_tokens": int64(10)},
			ruling: sdk.Fail, reasons: []string{"playbook is 21 tokens, over the budget of 10 (max_playbook_tokens)"}},
		{name: "config tokens within", cmp: plain, config: map[string]any{"max_playbook_tokens": int64(21)},
			ruling: sdk.Pass, reasons: []string{"playbook is 21 tokens, within the budget of 21 (max_playbook_tokens)"}},
		{name: "config tokens from JSON", cmp: plain, config: map[string]any{"max_playbook_tokens": 1000.0},
			ruling: sdk.Pass, reasons: []string{"playbook is 21 tokens, within the budget of 1000 (max_playbook_tokens)"}},
		{name: "baseline budget", cmp: comparison(tight, candidate(tight, later, nil)),
			ruling: sdk.Fail, reasons: []string{"playbook is 21 tokens, over the budget of 10 (baseline evolution.max_playbook_tokens)"}},
		{name: "candidate's tighter budget", cmp: comparison(loose, func() *strategy.Strategy {
			c := candidate(loose, later, nil)
			c.Evolution.MaxPlaybookTokens = 10
			return c
		}()),
			ruling: sdk.Fail, reasons: []string{"playbook is 21 tokens, over the budget of 10 (candidate evolution.max_playbook_tokens)"}},
		{name: "candidate's own budget", cmp: comparison(b, selfTight),
			ruling: sdk.Fail, reasons: []string{"playbook is 21 tokens, over the budget of 10 (candidate evolution.max_playbook_tokens)"}},
		{name: "cost within", cmp: plain, config: map[string]any{"max_cost_usd": 0.01},
			ruling: sdk.Pass, reasons: []string{"mean cost $0.0090 per task within max_cost_usd $0.0100 (baseline $0.0100, n=20)"}},
		{name: "both over", cmp: plain, config: map[string]any{"max_cost_usd": 0.005, "max_playbook_tokens": int64(20)},
			ruling: sdk.Fail, reasons: []string{
				"playbook is 21 tokens, over the budget of 20 (max_playbook_tokens)",
				"mean cost $0.0090 per task exceeds max_cost_usd $0.0050 (baseline $0.0100, n=20)",
			}},
		{name: "no tasks to cost", cmp: empty, config: map[string]any{"max_cost_usd": 0.01},
			ruling: sdk.Fail, reasons: []string{"no replayed tasks (n=0) to measure the mean cost against max_cost_usd $0.0100"}},
		{name: "fractional token budget", cmp: plain, config: map[string]any{"max_playbook_tokens": 1.5},
			err: "config: max_playbook_tokens: want an integer, got 1.5"},
		{name: "no cost metric", cmp: &sdk.Comparison{Baseline: plain.Baseline, Candidate: plain.Candidate}, config: map[string]any{"max_cost_usd": 0.01},
			err: "the comparison has no cost_usd metric to check max_cost_usd against"},
	})
}

func TestHumanReview(t *testing.T) {
	later := t0.Add(8 * 24 * time.Hour)
	b := baseline()
	b.Playbook = append(b.Playbook, strategy.Bullet{ID: "reasoning-00002", Section: "reasoning", Content: "Ask before bulk deletes"})
	same := comparison(b, candidate(b, later, nil))
	changed := candidate(b, later, map[string]float64{"response_speed": 0.8})
	changed.Playbook = append(changed.Playbook, strategy.Bullet{ID: "reasoning-00003", Section: "reasoning", Content: "Never guess a client's address"})
	reordered := candidate(b, later, nil)
	reordered.Playbook[0], reordered.Playbook[1] = reordered.Playbook[1], reordered.Playbook[0]
	strict := b.Clone()
	strict.Evolution.RequiresHumanReview = true
	selfStrict := candidate(b, later, nil)
	selfStrict.Evolution.RequiresHumanReview = true

	runGateCases(t, GateHumanReview, []gateCase{
		{name: "not required", cmp: same,
			ruling: sdk.Pass, reasons: []string{"neither strategy requires human review (when = strategy)"}},
		{name: "baseline requires", cmp: comparison(strict, candidate(strict, later, nil)),
			ruling: sdk.Review, reasons: []string{"the baseline and the candidate require human review (evolution.requires_human_review = true)"}},
		{name: "candidate dropping the requirement is still reviewed", cmp: comparison(strict, candidate(b, later, nil)),
			ruling: sdk.Review, reasons: []string{"the baseline requires human review (evolution.requires_human_review = true)"}},
		{name: "candidate requires", cmp: comparison(b, selfStrict),
			ruling: sdk.Review, reasons: []string{"the candidate requires human review (evolution.requires_human_review = true)"}},
		{name: "always", cmp: same, config: map[string]any{"when": "always"},
			ruling: sdk.Review, reasons: []string{"when = always: every candidate is reviewed"}},
		{name: "always and required", cmp: comparison(b, selfStrict), config: map[string]any{"when": "always"},
			ruling: sdk.Review, reasons: []string{"the candidate requires human review (evolution.requires_human_review = true)", "when = always: every candidate is reviewed"}},
		{name: "on change, changed", cmp: comparison(b, changed), config: map[string]any{"when": "on-change"},
			ruling: sdk.Review, reasons: []string{"when = on-change: the candidate makes 1 parameter change, 1 playbook operation"}},
		{name: "on change, limits changed", cmp: comparison(b, selfStrict), config: map[string]any{"when": "on-change"},
			ruling: sdk.Review, reasons: []string{"the candidate requires human review (evolution.requires_human_review = true)", "when = on-change: the candidate makes 1 constraint or limit change"}},
		{name: "on change, reordered", cmp: comparison(b, reordered), config: map[string]any{"when": "on-change"},
			ruling: sdk.Review, reasons: []string{"when = on-change: the candidate makes a playbook reordering"}},
		{name: "on change, unchanged", cmp: same, config: map[string]any{"when": "on-change"},
			ruling: sdk.Pass, reasons: []string{"no changes to review (when = on-change) and neither strategy requires human review"}},
		{name: "misspelt when", cmp: same, config: map[string]any{"when": "alway"},
			err: `config: when: "alway" is not one of always, on-change, strategy (did you mean "always"?)`},
		{name: "no document", cmp: &sdk.Comparison{},
			err: "baseline document has no evolution.requires_human_review"},
	})
}

// TestBuiltinsMatchSchema: the gates implemented here are exactly the
// gates the pipeline schema declares, and describe themselves from it.
func TestBuiltinsMatchSchema(t *testing.T) {
	var declared []string
	for name := range pipeline.BuiltinGates {
		declared = append(declared, name)
	}
	slices.Sort(declared)
	if got := BuiltinNames(); !slices.Equal(got, declared) {
		t.Fatalf("BuiltinNames() = %v, schema declares %v", got, declared)
	}
	for _, name := range declared {
		g, err := Builtin(name, Options{})
		if err != nil {
			t.Fatal(err)
		}
		info := g.Describe()
		if err := sdk.CheckInfo(info); err != nil || info.Name != name || info.Kind != sdk.KindGate || info.Description == "" {
			t.Errorf("%s: Describe() = %+v, CheckInfo: %v", name, info, err)
		}
		if len(info.Config) != len(pipeline.BuiltinGates[name]) {
			t.Errorf("%s: %d config fields, schema has %d", name, len(info.Config), len(pipeline.BuiltinGates[name]))
		}
	}
}

func TestBuiltinErrors(t *testing.T) {
	if _, err := Builtin("no-regresion", Options{}); errText(err) != `unknown built-in gate "no-regresion" (did you mean "no-regression"?)` {
		t.Errorf("misspelt: %v", err)
	}
	if _, err := Builtin("budget", Options{Confidence: 2}); errText(err) != `built-in gate "budget": confidence 2 is not in (0, 1)` {
		t.Errorf("bad options: %v", err)
	}
	g, _ := Builtin("min-fidelity", Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.Check(ctx, &sdk.Comparison{Fidelity: 1}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestGatesRecomputeAtTheirConfidence: a gate asking for another
// confidence than the comparison's gets the interval Compare would have
// given at that confidence, from the same resamples.
func TestGatesRecomputeAtTheirConfidence(t *testing.T) {
	b := baseline()
	c := candidate(b, t0.Add(8*24*time.Hour), nil)
	tasks := outcomes(60, 20, 12, 8)
	at95 := Compare(b, c, tasks, 1, Options{Seed: 1})
	at80 := Compare(b, c, tasks, 1, Options{Seed: 1, Confidence: 0.8})
	v, err := check(GateNoRegression, at95, map[string]any{"confidence": 0.8, "tolerance": 1})
	if err != nil {
		t.Fatal(err)
	}
	want := at80.Metrics[0]
	if v.Metrics["ci_low"] != want.CILow || v.Metrics["ci_high"] != want.CIHigh {
		t.Errorf("recomputed CI [%v, %v], Compare at 0.8 gives [%v, %v]", v.Metrics["ci_low"], v.Metrics["ci_high"], want.CILow, want.CIHigh)
	}
	if want.CIHigh-want.CILow >= at95.Metrics[0].CIHigh-at95.Metrics[0].CILow {
		t.Error("the 80% interval is not narrower than the 95% one")
	}
}

// TestGatesJudgeStoredComparisons: a comparison that went through JSON
// (the store, a plugin) is judged exactly as the live one, and no gate
// changes the comparison it reads.
func TestGatesJudgeStoredComparisons(t *testing.T) {
	b := baseline()
	b.Evolution.MaxPlaybookTokens = 100
	c := candidate(b, t0.Add(24*time.Hour), map[string]float64{"response_speed": 0.9})
	live := Compare(b, c, outcomes(60, 20, 12, 8), 0.98, Options{Seed: 1})
	before, err := json.Marshal(live)
	if err != nil {
		t.Fatal(err)
	}
	var stored sdk.Comparison
	if err := json.Unmarshal(before, &stored); err != nil {
		t.Fatal(err)
	}
	configs := map[string]map[string]any{GateBudget: {"max_cost_usd": 0.02}, GateHumanReview: {"when": "on-change"}}
	for _, name := range BuiltinNames() {
		v1, err1 := check(name, live, configs[name])
		v2, err2 := check(name, &stored, configs[name])
		if errText(err1) != errText(err2) || !reflect.DeepEqual(v1, v2) {
			t.Errorf("%s: live %+v (%v), stored %+v (%v)", name, v1, err1, v2, err2)
		}
		if err1 != nil {
			t.Errorf("%s: %v", name, err1)
		}
	}
	after, _ := json.Marshal(live)
	if string(after) != string(before) {
		t.Error("a gate changed the comparison")
	}
}

func TestEvidenceFormat(t *testing.T) {
	for _, tc := range []struct {
		x    float64
		dec  int
		want string
	}{{-0.0001, 3, "0.000"}, {math.Copysign(0, -1), 3, "0.000"}, {0.1234, 3, "0.123"}, {-2, 2, "-2.00"}} {
		if got := fixed(tc.x, tc.dec); got != tc.want {
			t.Errorf("fixed(%v, %d) = %q, want %q", tc.x, tc.dec, got, tc.want)
		}
	}
	if got := signed(-0.0001, 3); got != "0.000" {
		t.Errorf("signed(-0.0001) = %q", got)
	}
	if got := signedNum(0.75 - 0.7); got != "+0.05" {
		t.Errorf("signedNum(0.75-0.7) = %q", got)
	}
	if got := evidence(sdk.Metric{Name: "custom", Effect: 1, CILow: 0.5, CIHigh: 1.5, P: 0.0004, N: 3}); !strings.HasPrefix(got, "custom +1.000 [0.500, 1.500], p<0.001, n=3") {
		t.Errorf("evidence = %q", got)
	}
}
