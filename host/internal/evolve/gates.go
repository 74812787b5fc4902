package evolve

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/schema"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/host/internal/suggest"
	"github.com/sextant-dev/sextant/sdk"
)

// The built-in gates, by the name a pipeline's [[gates]] use = "…" gives.
const (
	GateDeltaBound   = "delta-bound"
	GateCooldown     = "cooldown"
	GateConstraints  = "constraints"
	GateNoRegression = "no-regression"
	GateImprovement  = "improvement"
	GateMinFidelity  = "min-fidelity"
	GateBudget       = "budget"
	GateHumanReview  = "human-review"
)

// BuiltinVersion is the version every built-in gate describes itself with.
const BuiltinVersion = "1.0.0"

type checkFunc func(g *builtinGate, c *sdk.Comparison, cfg gateConfig) (*sdk.Verdict, error)

var builtins = map[string]struct {
	doc   string
	check checkFunc
}{
	GateDeltaBound:   {"every parameter change within the baseline's evolution.max_parameter_delta and the parameter's bounds", checkDeltaBound},
	GateCooldown:     {"candidate created no earlier than the baseline's created_at + evolution.cooldown", checkCooldown},
	GateConstraints:  {"hard constraints kept and no violations in the candidate's replays", checkConstraints},
	GateNoRegression: {"the metric's drop, at the CI's worst, within tolerance", checkNoRegression},
	GateImprovement:  {"the metric's gain, at the CI's worst, above min_effect", checkImprovement},
	GateMinFidelity:  {"replay fidelity at least min", checkMinFidelity},
	GateBudget:       {"playbook within its token budget and mean cost within max_cost_usd", checkBudget},
	GateHumanReview:  {"asks a person when the strategy requires it, always, or on any change", checkHumanReview},
}

// BuiltinNames returns the names of the built-in gates, sorted.
func BuiltinNames() []string { return slices.Sorted(maps.Keys(builtins)) }

// Builtin returns the built-in gate called name. opts must be the options
// the comparison was built with: a no-regression or improvement gate whose
// confidence differs from the comparison's recomputes the interval from
// the comparison's tasks with opts' resamples and seed.
//
// A built-in gate reads its [[gates]] keys from Comparison.Config (the
// keys, types and defaults of pipeline.BuiltinGates; an unknown key is an
// error) and everything else from the comparison, including the
// strategies' limits from Baseline.Document and Candidate.Document.
// Limits on the step from baseline to candidate (max_parameter_delta,
// cooldown) are the baseline's, so a candidate cannot loosen the rule that
// judges it; limits on what the candidate is (the playbook budget,
// requires_human_review) bind when either strategy sets them.
func Builtin(name string, opts Options) (sdk.Gate, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("built-in gate %q: %w", name, err)
	}
	b, ok := builtins[name]
	if !ok {
		return nil, fmt.Errorf("unknown built-in gate %q%s", name, suggest.Hint(name, BuiltinNames()))
	}
	return &builtinGate{name: name, doc: b.doc, check: b.check, opts: opts.withDefaults()}, nil
}

type builtinGate struct {
	name, doc string
	check     checkFunc
	opts      Options
}

var _ sdk.Gate = (*builtinGate)(nil)

func (g *builtinGate) Describe() sdk.Info {
	info := sdk.Info{Name: g.name, Kind: sdk.KindGate, Version: BuiltinVersion, API: sdk.APIVersion, Description: g.doc}
	if fs := pipeline.BuiltinGates[g.name]; len(fs) > 0 {
		info.Config = schema.ToConfig(fs)
	}
	return info
}

// Check judges c. It never modifies c.
func (g *builtinGate) Check(ctx context.Context, c *sdk.Comparison) (*sdk.Verdict, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cfg, err := newGateConfig(g.name, c.Config)
	if err != nil {
		return nil, err
	}
	return g.check(g, c, cfg)
}

func pass(reasons ...string) *sdk.Verdict { return &sdk.Verdict{Ruling: sdk.Pass, Reasons: reasons} }
func fail(reasons ...string) *sdk.Verdict { return &sdk.Verdict{Ruling: sdk.Fail, Reasons: reasons} }

// checkDeltaBound fails each parameter change whose size exceeds the
// baseline's evolution.max_parameter_delta, and each new value outside the
// candidate's parameter_bounds.
func checkDeltaBound(_ *builtinGate, c *sdk.Comparison, _ gateConfig) (*sdk.Verdict, error) {
	changes := c.Diff.Parameters
	if len(changes) == 0 {
		return pass("no parameter changes"), nil
	}
	limit, err := docFloat(c.Baseline, "baseline", "evolution", "max_parameter_delta")
	if err != nil {
		return nil, err
	}
	var bad []string
	largest := changes[0]
	for _, p := range changes {
		d := p.To - p.From
		if math.Abs(d) > math.Abs(largest.To-largest.From) {
			largest = p
		}
		if exceeds(math.Abs(d), limit) {
			bad = append(bad, fmt.Sprintf("%s %s -> %s (delta %s) exceeds max_parameter_delta %s", p.Name, num(p.From), num(p.To), signedNum(d), num(limit)))
		}
		lo, hi, ok, err := docBounds(c.Candidate, "candidate", p.Name)
		if err != nil {
			return nil, err
		}
		if ok && (p.To < lo || p.To > hi) {
			bad = append(bad, fmt.Sprintf("%s %s -> %s is outside its bounds [%s, %s]", p.Name, num(p.From), num(p.To), num(lo), num(hi)))
		}
	}
	metrics := map[string]float64{"max_delta": math.Abs(largest.To - largest.From), "max_parameter_delta": limit}
	if len(bad) > 0 {
		v := fail(bad...)
		v.Metrics = metrics
		return v, nil
	}
	v := pass(fmt.Sprintf("%s within max_parameter_delta %s (largest: %s %s)",
		plural(len(changes), "parameter change"), num(limit), largest.Name, signedNum(largest.To-largest.From)))
	v.Metrics = metrics
	return v, nil
}

// checkCooldown fails a candidate created before the baseline's cooldown
// ends: baseline metadata.created_at + baseline evolution.cooldown.
func checkCooldown(_ *builtinGate, c *sdk.Comparison, _ gateConfig) (*sdk.Verdict, error) {
	s, err := docString(c.Baseline, "baseline", "evolution", "cooldown")
	if err != nil {
		return nil, err
	}
	cd, err := strategy.ParseDuration(s)
	if err != nil {
		return nil, fmt.Errorf("baseline document: evolution.cooldown: %w", err)
	}
	if cd == 0 {
		return pass("the baseline has no cooldown (evolution.cooldown = 0s)"), nil
	}
	born, err := docTime(c.Baseline, "baseline", "metadata", "created_at")
	if err != nil {
		return nil, err
	}
	created, err := docTime(c.Candidate, "candidate", "metadata", "created_at")
	if err != nil {
		return nil, err
	}
	ends := born.Add(cd)
	const layout = "2006-01-02T15:04:05Z07:00"
	why := fmt.Sprintf("(baseline created %s + cooldown %s)", born.Format(layout), strategy.FormatDuration(cd))
	if created.Before(ends) {
		return fail(fmt.Sprintf("candidate created %s, before the cooldown ends at %s %s", created.Format(layout), ends.Format(layout), why)), nil
	}
	return pass(fmt.Sprintf("candidate created %s, not before the cooldown ended at %s %s", created.Format(layout), ends.Format(layout), why)), nil
}

// maxListed is how many offending tasks a reason names before "and N more".
const maxListed = 10

// checkConstraints fails when the candidate no longer blocks an action the
// baseline's never_execute blocks, no longer confirms (or blocks) an action
// in the baseline's must_confirm_before, or broke a constraint in any
// replay. prefer_confirm_for is a preference, not a hard constraint.
func checkConstraints(_ *builtinGate, c *sdk.Comparison, _ gateConfig) (*sdk.Verdict, error) {
	lists := map[string][]string{}
	for _, r := range []struct {
		ref       sdk.StrategyRef
		who, list string
	}{
		{c.Baseline, "baseline", "never_execute"}, {c.Baseline, "baseline", "must_confirm_before"},
		{c.Candidate, "candidate", "never_execute"}, {c.Candidate, "candidate", "must_confirm_before"},
	} {
		l, err := docStrings(r.ref, r.who, "constraints", r.list)
		if err != nil {
			return nil, err
		}
		lists[r.who+"."+r.list] = l
	}
	has := func(list []string, a string) bool {
		return slices.ContainsFunc(list, func(x string) bool { return strategy.NormalizeAction(x) == strategy.NormalizeAction(a) })
	}
	var bad []string
	for _, a := range sortedCopy(lists["baseline.never_execute"]) {
		if !has(lists["candidate.never_execute"], a) {
			bad = append(bad, fmt.Sprintf("candidate no longer blocks %q (baseline constraints.never_execute)", a))
		}
	}
	for _, a := range sortedCopy(lists["baseline.must_confirm_before"]) {
		if !has(lists["candidate.must_confirm_before"], a) && !has(lists["candidate.never_execute"], a) {
			bad = append(bad, fmt.Sprintf("candidate no longer confirms before %q (baseline constraints.must_confirm_before)", a))
		}
	}

	total, broken := 0, []string{}
	for _, t := range sortTasks(c.Tasks) {
		if v := t.Candidate.Violations; v > 0 {
			total += v
			broken = append(broken, fmt.Sprintf("%s (%d)", t.Task, v))
		}
	}
	if len(c.Tasks) == 0 {
		// A comparison without tasks still carries the violations metric.
		if m, ok := findMetric(c, MetricViolations); ok && m.Candidate > 0 {
			bad = append(bad, fmt.Sprintf("candidate replays average %s constraint violations per task (n=%d)", fixed(m.Candidate, 2), m.N))
		}
	}
	if total > 0 {
		listed := broken[:min(len(broken), maxListed)]
		more := ""
		if len(broken) > maxListed {
			more = fmt.Sprintf(" and %d more", len(broken)-maxListed)
		}
		bad = append(bad, fmt.Sprintf("candidate replays broke constraints %s in %d of %d tasks: %s%s",
			plural(total, "time"), len(broken), len(c.Tasks), strings.Join(listed, ", "), more))
	}
	metrics := map[string]float64{"violations": float64(total)}
	if len(bad) > 0 {
		v := fail(bad...)
		v.Metrics = metrics
		return v, nil
	}
	v := pass(fmt.Sprintf("hard constraints kept (%d never_execute, %d must_confirm_before) and no violations in %s",
		len(lists["baseline.never_execute"]), len(lists["baseline.must_confirm_before"]), plural(len(c.Tasks), "candidate replay")))
	v.Metrics = metrics
	return v, nil
}

func sortedCopy(ss []string) []string {
	out := slices.Clone(ss)
	slices.Sort(out)
	return out
}

func findMetric(c *sdk.Comparison, name string) (sdk.Metric, bool) {
	for _, m := range c.Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return sdk.Metric{}, false
}

// metricAt returns metric name of c with its interval at confidence conf.
// A metric computed at another confidence is recomputed from c.Tasks with
// the gate's options, which give the same resamples Compare drew.
func (g *builtinGate) metricAt(c *sdk.Comparison, name string, conf float64) (sdk.Metric, error) {
	m, ok := findMetric(c, name)
	if !ok {
		have := make([]string, len(c.Metrics))
		for i, m := range c.Metrics {
			have[i] = m.Name
		}
		return sdk.Metric{}, fmt.Errorf("config: metric: %q is not in the comparison%s (have %s)", name, suggest.Hint(name, have), strings.Join(have, ", "))
	}
	if math.Abs(m.Confidence-conf) < 1e-12 {
		return m, nil
	}
	def, known := lookupMetric(name)
	if !known || len(c.Tasks) != m.N {
		return sdk.Metric{}, fmt.Errorf("metric %s was computed at confidence %v and cannot be recomputed at %v without its %d tasks", name, m.Confidence, conf, m.N)
	}
	opts := g.opts
	opts.Confidence = conf
	return computeMetrics(sortTasks(c.Tasks), []metricDef{def}, opts)[0], nil
}

// worse names a change for the worse in m: a drop for a metric where
// higher is better, a rise where lower is.
func worse(m sdk.Metric) string {
	if m.HigherIsBetter {
		return "drop"
	}
	return "rise"
}

func better(m sdk.Metric) string {
	if m.HigherIsBetter {
		return "gain"
	}
	return "fall"
}

// checkNoRegression fails when the interval allows the metric to get worse
// by more than tolerance. The change for the worse is −Effect where higher
// is better and +Effect where lower is; its upper bound is −CILow or
// CIHigh. Pass iff that bound ≤ tolerance: with tolerance 0 the candidate
// must be shown, at the given confidence, to be no worse.
func checkNoRegression(g *builtinGate, c *sdk.Comparison, cfg gateConfig) (*sdk.Verdict, error) {
	name, conf, err := metricConfig(cfg)
	if err != nil {
		return nil, err
	}
	tol, _, err := cfg.number("tolerance")
	if err != nil {
		return nil, err
	}
	if tol < 0 {
		return nil, fmt.Errorf("config: tolerance: %v is negative (to demand a gain use the improvement gate)", tol)
	}
	m, err := g.metricAt(c, name, conf)
	if err != nil {
		return nil, err
	}
	if m.N == 0 {
		return fail(fmt.Sprintf("%s: no paired tasks (n=0), so a %s cannot be ruled out", name, worse(m))), nil
	}
	bound := m.CIHigh
	if m.HigherIsBetter {
		bound = -m.CILow
	}
	dec := decimals(name)
	metrics := map[string]float64{"effect": m.Effect, "ci_low": m.CILow, "ci_high": m.CIHigh, "p": m.P, "n": float64(m.N), "worst": bound}
	if exceeds(bound, tol) {
		v := fail(fmt.Sprintf("%s: %s exceeds tolerance %s (CI upper bound of the %s %s)", evidence(m), worse(m), fixed(tol, dec), worse(m), fixed(bound, dec)))
		v.Metrics = metrics
		return v, nil
	}
	v := pass(fmt.Sprintf("%s: %s within tolerance %s (CI upper bound of the %s %s)", evidence(m), worse(m), fixed(tol, dec), worse(m), fixed(bound, dec)))
	v.Metrics = metrics
	return v, nil
}

// checkImprovement passes when the interval shows the metric getting
// better by more than min_effect: the gain is +Effect where higher is
// better and −Effect where lower is; its lower bound is CILow or −CIHigh.
// Pass iff that bound > min_effect.
func checkImprovement(g *builtinGate, c *sdk.Comparison, cfg gateConfig) (*sdk.Verdict, error) {
	name, conf, err := metricConfig(cfg)
	if err != nil {
		return nil, err
	}
	minEffect, _, err := cfg.number("min_effect")
	if err != nil {
		return nil, err
	}
	m, err := g.metricAt(c, name, conf)
	if err != nil {
		return nil, err
	}
	if m.N == 0 {
		return fail(fmt.Sprintf("%s: no paired tasks (n=0), so no %s can be shown", name, better(m))), nil
	}
	bound := -m.CIHigh
	if m.HigherIsBetter {
		bound = m.CILow
	}
	dec := decimals(name)
	metrics := map[string]float64{"effect": m.Effect, "ci_low": m.CILow, "ci_high": m.CIHigh, "p": m.P, "n": float64(m.N), "least": bound}
	if exceeds(bound, minEffect) {
		v := pass(fmt.Sprintf("%s: %s above min_effect %s (CI lower bound of the %s %s)", evidence(m), better(m), fixed(minEffect, dec), better(m), fixed(bound, dec)))
		v.Metrics = metrics
		return v, nil
	}
	v := fail(fmt.Sprintf("%s: %s not shown above min_effect %s (CI lower bound of the %s %s)", evidence(m), better(m), fixed(minEffect, dec), better(m), fixed(bound, dec)))
	v.Metrics = metrics
	return v, nil
}

func metricConfig(cfg gateConfig) (string, float64, error) {
	name, err := cfg.str("metric")
	if err != nil {
		return "", 0, err
	}
	conf, err := cfg.confidence()
	return name, conf, err
}

// checkMinFidelity fails when fewer self-replays than min reproduced their
// trace.
func checkMinFidelity(_ *builtinGate, c *sdk.Comparison, cfg gateConfig) (*sdk.Verdict, error) {
	lo, _, err := cfg.number("min")
	if err != nil {
		return nil, err
	}
	if lo < 0 || lo > 1 {
		return nil, fmt.Errorf("config: min: %v is not in [0, 1]", lo)
	}
	v := pass(fmt.Sprintf("fidelity %s meets min %s", fixed(c.Fidelity, 3), fixed(lo, 3)))
	if !(c.Fidelity >= lo) { // NaN fails
		v = fail(fmt.Sprintf("fidelity %s is below min %s", fixed(c.Fidelity, 3), fixed(lo, 3)))
	}
	v.Metrics = map[string]float64{"fidelity": c.Fidelity}
	if math.IsNaN(c.Fidelity) {
		v.Metrics = nil // NaN does not encode as JSON
	}
	return v, nil
}

// checkBudget fails a candidate whose playbook exceeds its token budget
// or whose mean cost per task exceeds max_cost_usd. The token budget is
// max_playbook_tokens when the gate sets it, else the smaller non-zero
// evolution.max_playbook_tokens of the two strategies.
func checkBudget(_ *builtinGate, c *sdk.Comparison, cfg gateConfig) (*sdk.Verdict, error) {
	var ok, bad []string
	metrics := map[string]float64{}

	limit, limitSet, err := cfg.integer("max_playbook_tokens")
	if err != nil {
		return nil, err
	}
	if limitSet && limit < 0 {
		return nil, fmt.Errorf("config: max_playbook_tokens: %d is negative", limit)
	}
	source := "max_playbook_tokens"
	if !limitSet {
		for _, r := range []struct {
			ref sdk.StrategyRef
			who string
		}{{c.Baseline, "baseline"}, {c.Candidate, "candidate"}} {
			f, err := docFloat(r.ref, r.who, "evolution", "max_playbook_tokens")
			if err != nil {
				return nil, err
			}
			if n := int(f); n > 0 && (!limitSet || n < limit) {
				limit, limitSet, source = n, true, r.who+" evolution.max_playbook_tokens"
			}
		}
	}
	if limitSet {
		text, err := docString(c.Candidate, "candidate", "playbook_text")
		if err != nil {
			return nil, err
		}
		tokens := strategy.EstimateTokens(text)
		metrics["playbook_tokens"] = float64(tokens)
		if tokens > limit {
			bad = append(bad, fmt.Sprintf("playbook is %d tokens, over the budget of %d (%s)", tokens, limit, source))
		} else {
			ok = append(ok, fmt.Sprintf("playbook is %d tokens, within the budget of %d (%s)", tokens, limit, source))
		}
	}

	maxCost, costSet, err := cfg.number("max_cost_usd")
	if err != nil {
		return nil, err
	}
	if costSet {
		if maxCost < 0 {
			return nil, fmt.Errorf("config: max_cost_usd: %v is negative", maxCost)
		}
		m, found := findMetric(c, MetricCostUSD)
		switch {
		case !found:
			return nil, fmt.Errorf("the comparison has no %s metric to check max_cost_usd against", MetricCostUSD)
		case m.N == 0:
			bad = append(bad, fmt.Sprintf("no replayed tasks (n=0) to measure the mean cost against max_cost_usd %s", usd(maxCost)))
		case exceeds(m.Candidate, maxCost):
			metrics["mean_cost_usd"] = m.Candidate
			bad = append(bad, fmt.Sprintf("mean cost %s per task exceeds max_cost_usd %s (baseline %s, n=%d)", usd(m.Candidate), usd(maxCost), usd(m.Baseline), m.N))
		default:
			metrics["mean_cost_usd"] = m.Candidate
			ok = append(ok, fmt.Sprintf("mean cost %s per task within max_cost_usd %s (baseline %s, n=%d)", usd(m.Candidate), usd(maxCost), usd(m.Baseline), m.N))
		}
	}

	var v *sdk.Verdict
	switch {
	case len(bad) > 0:
		v = fail(bad...)
	case len(ok) > 0:
		v = pass(ok...)
	default:
		v = pass("no budget set (max_playbook_tokens, max_cost_usd and both strategies' evolution.max_playbook_tokens are unset)")
	}
	if len(metrics) > 0 {
		v.Metrics = metrics
	}
	return v, nil
}

// checkHumanReview asks for review when either strategy sets
// evolution.requires_human_review (whatever when says), when when is
// "always", and when when is "on-change" and the diff is not empty
// (parameters, playbook, constraints or limits).
func checkHumanReview(_ *builtinGate, c *sdk.Comparison, cfg gateConfig) (*sdk.Verdict, error) {
	when, err := cfg.str("when")
	if err != nil {
		return nil, err
	}
	var reasons, requiring []string
	for _, r := range []struct {
		ref sdk.StrategyRef
		who string
	}{{c.Baseline, "baseline"}, {c.Candidate, "candidate"}} {
		req, err := docBool(r.ref, r.who, "evolution", "requires_human_review")
		if err != nil {
			return nil, err
		}
		if req {
			requiring = append(requiring, r.who)
		}
	}
	switch len(requiring) {
	case 1:
		reasons = append(reasons, fmt.Sprintf("the %s requires human review (evolution.requires_human_review = true)", requiring[0]))
	case 2:
		reasons = append(reasons, "the baseline and the candidate require human review (evolution.requires_human_review = true)")
	}
	d := c.Diff
	var changed []string
	if n := len(d.Parameters); n > 0 {
		changed = append(changed, plural(n, "parameter change"))
	}
	// Diff.Constraints also carries "playbook: bullets reordered", which
	// is a playbook change.
	other, reordered := 0, false
	for _, line := range d.Constraints {
		if strings.HasPrefix(line, "playbook:") {
			reordered = true
		} else {
			other++
		}
	}
	if n := len(d.Playbook); n > 0 {
		changed = append(changed, plural(n, "playbook operation"))
	}
	if reordered {
		changed = append(changed, "a playbook reordering")
	}
	if other > 0 {
		changed = append(changed, plural(other, "constraint or limit change"))
	}
	switch when {
	case "always":
		reasons = append(reasons, "when = always: every candidate is reviewed")
	case "on-change":
		if len(changed) > 0 {
			reasons = append(reasons, "when = on-change: the candidate makes "+strings.Join(changed, ", "))
		}
	}
	if len(reasons) > 0 {
		return &sdk.Verdict{Ruling: sdk.Review, Reasons: reasons}, nil
	}
	if when == "on-change" {
		return pass("no changes to review (when = on-change) and neither strategy requires human review"), nil
	}
	return pass("neither strategy requires human review (when = strategy)"), nil
}
