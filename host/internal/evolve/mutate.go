package evolve

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/host/internal/suggest"
	"github.com/sextant-dev/sextant/sdk"
)

// Proposing candidates (DESIGN §7, "Evolution"). A mutator derives
// candidate strategies from a baseline; the parameter mutators decide
// directions from probes, short replays of a one-change strategy against
// the baseline. Mutators only propose: the caller replays, compares and
// gates what they return, and Select, Promote, Archive and Queue act on the
// outcome.
//
// Mutators never read the clock or global randomness: the same baseline,
// options, probe answers (and provider answers, for Curate) give the same
// candidates, byte for byte.

// Probe replays cand against the baseline and returns their comparison
// (Compare's result). A probe may replay a sample of the recorded tasks;
// mutators read only the comparison's metrics.
type Probe func(ctx context.Context, cand *strategy.Strategy) (*sdk.Comparison, error)

// Mutator proposes candidate strategies derived from a baseline.
type Mutator interface {
	// Name is the mutator's name as pipelines write it ([evolve]
	// mutators) and as created_by quotes it.
	Name() string
	// Propose returns the candidates, each a Revise of base (minor
	// version bump, parent_version = base's version, a change_log entry
	// quoting the evidence). A mutator that found nothing worth proposing
	// returns an error matching ErrNothingProposed that says why (no
	// candidate and a nil error is read as that, without a reason). The
	// round chooses each candidate's final version (RoundConfig.Taken).
	Propose(ctx context.Context, base *strategy.Strategy, p Probe) ([]*strategy.Strategy, error)
}

// The mutator names of the pipeline schema ([evolve] mutators).
const (
	MutatorGreedy       = "greedy"
	MutatorConservative = "conservative"
	MutatorExploratory  = "exploratory"
	MutatorCurate       = "curate"
)

// Author is what promotion records as the author of a promoted version;
// candidates are created by "sextant evolve (<mutator>)".
const Author = "sextant evolve"

// probeAuthor is created_by of the one-change strategies that probes
// replay. It names no mutator, so the probes of greedy and conservative
// are the same strategies (same hash) and MemoProbe replays them once.
const probeAuthor = Author + " (probe)"

func createdBy(mutator string) string { return Author + " (" + mutator + ")" }

// MutateOptions configure the parameter mutators. The zero value is not
// valid: At is required.
type MutateOptions struct {
	// At is created_at of every candidate and probe strategy and the date
	// of their change_log entries. The library never reads the clock.
	At time.Time
	// Metric is the metric probes are read on; "" means success_rate.
	// Where lower is better (cost_usd, …) an improvement is a fall.
	Metric string
	// Seed seeds Exploratory's directions. Every seed is valid.
	Seed uint64
}

func (o MutateOptions) validate(mutator string) (MutateOptions, error) {
	if o.At.IsZero() {
		return o, fmt.Errorf("%s: options: missing time (At)", mutator)
	}
	if o.Metric == "" {
		o.Metric = MetricSuccessRate
	}
	if _, ok := lookupMetric(o.Metric); !ok {
		names := MetricNames()
		return o, fmt.Errorf("%s: options: unknown metric %q%s (want one of %s)", mutator, o.Metric, suggest.Hint(o.Metric, names), strings.Join(names, ", "))
	}
	return o, nil
}

// Greedy returns the mutator that moves parameters by a full step in the
// direction probes show improves the metric.
//
// For each parameter, in name order, it probes one step up and one step
// down (step = the baseline's evolution.max_parameter_delta, clipped to the
// parameter's bounds; a direction the bound leaves no room for is not
// probed) and reads the metric's effect. A parameter whose better probe
// improved the metric (effect above zero in the metric's good direction)
// moves by that step; when both directions improve it equally the
// direction is unclear and it stays. Greedy proposes one candidate moving
// every such parameter, or none when no probe improved the metric. Each
// change_log reason quotes the probe's evidence:
//
//	replay: success_rate +0.045 [0.020, 0.075], p=0.004, n=200 (probe 0.75→0.85)
//
// Greedy makes two probes per parameter; probes are one-change strategies
// created by "sextant evolve (probe)" with branch_type experimental.
func Greedy(opts MutateOptions) (Mutator, error) {
	o, err := opts.validate(MutatorGreedy)
	if err != nil {
		return nil, err
	}
	return &stepMutator{name: MutatorGreedy, frac: 1, opts: o}, nil
}

// Conservative is Greedy with half steps: it probes the same full steps
// (so MemoProbe shares them with Greedy) and moves each improving
// parameter half a step in the better direction.
func Conservative(opts MutateOptions) (Mutator, error) {
	o, err := opts.validate(MutatorConservative)
	if err != nil {
		return nil, err
	}
	return &stepMutator{name: MutatorConservative, frac: 0.5, opts: o}, nil
}

// stepMutator is Greedy (frac 1) and Conservative (frac ½).
type stepMutator struct {
	name string
	frac float64 // of a step that the candidate moves
	opts MutateOptions
}

var _ Mutator = (*stepMutator)(nil)

func (m *stepMutator) Name() string { return m.name }

func (m *stepMutator) Propose(ctx context.Context, base *strategy.Strategy, p Probe) ([]*strategy.Strategy, error) {
	if p == nil {
		return nil, fmt.Errorf("%s: no probe", m.name)
	}
	step := base.Evolution.MaxParameterDelta
	if !(step > 0) {
		return nil, noStep(m.name, base)
	}
	var sets []strategy.Set
	var tried []string // what each probe found, for the reason when nothing improved
	for _, name := range sortedParams(base) {
		from := base.Parameters[name]
		b := base.Bounds(name)
		type probed struct {
			to, gain float64
			m        sdk.Metric
		}
		var best []probed
		for _, dir := range []float64{1, -1} {
			to := move(from, dir*step, b)
			if to == from {
				continue
			}
			metric, err := m.probe(ctx, base, p, name, from, to)
			if err != nil {
				return nil, err
			}
			g := gain(metric)
			tried = append(tried, fmt.Sprintf("%s→%s %s", name, num(to), signed(metric.Effect, decimals(metric.Name))))
			if !exceeds(g, 0) {
				continue
			}
			switch {
			case len(best) == 0 || g > best[0].gain:
				best = []probed{{to, g, metric}}
			case g == best[0].gain:
				best = append(best, probed{to, g, metric})
			}
		}
		if len(best) != 1 {
			continue // nothing improved, or both directions equally: no direction
		}
		dir := math.Copysign(1, best[0].to-from)
		to := move(from, dir*m.frac*step, b)
		sets = append(sets, strategy.Set{Parameter: name, To: to,
			Reason: fmt.Sprintf("replay: %s (probe %s→%s)", evidence(best[0].m), num(from), num(best[0].to))})
	}
	if len(sets) == 0 {
		if len(tried) == 0 {
			return nil, nothingProposed(m.name, "every parameter is at its bound in both directions")
		}
		return nil, nothingProposed(m.name, "no single parameter move improved %s in one direction only (probes: %s)", metricName(m.opts.Metric), strings.Join(tried, ", "))
	}
	cand, err := base.Revise(strategy.Revision{By: createdBy(m.name), At: m.opts.At, Parameters: sets})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.name, err)
	}
	return []*strategy.Strategy{cand}, nil
}

// probe replays base with one parameter moved and returns the metric.
func (m *stepMutator) probe(ctx context.Context, base *strategy.Strategy, p Probe, name string, from, to float64) (sdk.Metric, error) {
	what := fmt.Sprintf("%s: probe %s %s→%s", m.name, name, num(from), num(to))
	ps, err := probeStrategy(base, m.opts.At, strategy.Set{Parameter: name, To: to, Reason: "probe"})
	if err != nil {
		return sdk.Metric{}, fmt.Errorf("%s: %w", what, err)
	}
	return runProbe(ctx, p, ps, m.opts.Metric, what)
}

// Exploratory returns the mutator that moves every parameter a full step
// in a seeded random direction (PCG from math/rand/v2 seeded with
// opts.Seed, one draw per parameter in name order, taken from the raw
// 64-bit output so no Go release can change it), clipped to the bounds.
//
// It makes one confirming probe: the moved strategy is replayed and the
// candidate is proposed only if the metric improved (effect above zero in
// its good direction). Every change_log reason quotes that probe, so even
// a random move comes with evidence:
//
//	replay: success_rate +0.020 [0.005, 0.035], p=0.021, n=200 (exploratory probe of 3 moves, seed 7)
//
// Exploration escapes the one-at-a-time view of Greedy (parameters that
// only help together); the probe keeps it from proposing moves the gates
// would reject anyway.
func Exploratory(opts MutateOptions) (Mutator, error) {
	o, err := opts.validate(MutatorExploratory)
	if err != nil {
		return nil, err
	}
	return &exploratory{opts: o}, nil
}

// exploreStream is the PCG stream of Exploratory ("explore").
const exploreStream = 0x6578706c6f7265

type exploratory struct{ opts MutateOptions }

var _ Mutator = (*exploratory)(nil)

func (*exploratory) Name() string { return MutatorExploratory }

func (x *exploratory) Propose(ctx context.Context, base *strategy.Strategy, p Probe) ([]*strategy.Strategy, error) {
	if p == nil {
		return nil, fmt.Errorf("%s: no probe", MutatorExploratory)
	}
	step := base.Evolution.MaxParameterDelta
	if !(step > 0) {
		return nil, noStep(MutatorExploratory, base)
	}
	src := rand.NewPCG(x.opts.Seed, exploreStream)
	var sets []strategy.Set
	for _, name := range sortedParams(base) {
		dir := 1.0
		if src.Uint64()>>63 == 0 {
			dir = -1
		}
		from := base.Parameters[name]
		if to := move(from, dir*step, base.Bounds(name)); to != from {
			sets = append(sets, strategy.Set{Parameter: name, To: to, Reason: "probe"})
		}
	}
	if len(sets) == 0 {
		return nil, nothingProposed(MutatorExploratory, "every parameter is at its bound in the drawn direction (seed %d)", x.opts.Seed)
	}
	what := fmt.Sprintf("%s: probe of %s", MutatorExploratory, plural(len(sets), "move"))
	ps, err := probeStrategy(base, x.opts.At, sets...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	m, err := runProbe(ctx, p, ps, x.opts.Metric, what)
	if err != nil {
		return nil, err
	}
	if !exceeds(gain(m), 0) {
		return nil, nothingProposed(MutatorExploratory, "its random move (seed %d) did not improve %s: %s", x.opts.Seed, metricName(x.opts.Metric), evidence(m))
	}
	reason := fmt.Sprintf("replay: %s (exploratory probe of %s, seed %d)", evidence(m), plural(len(sets), "move"), x.opts.Seed)
	for i := range sets {
		sets[i].Reason = reason
	}
	cand, err := base.Revise(strategy.Revision{By: createdBy(MutatorExploratory), At: x.opts.At, Parameters: sets})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", MutatorExploratory, err)
	}
	return []*strategy.Strategy{cand}, nil
}

// probeStrategy is base with sets applied, as an experimental version
// created by probeAuthor at at.
func probeStrategy(base *strategy.Strategy, at time.Time, sets ...strategy.Set) (*strategy.Strategy, error) {
	return base.Revise(strategy.Revision{By: probeAuthor, At: at, BranchType: strategy.Experimental, Parameters: sets})
}

// runProbe calls p on ps and returns metric name of its comparison.
func runProbe(ctx context.Context, p Probe, ps *strategy.Strategy, name, what string) (sdk.Metric, error) {
	if err := ctx.Err(); err != nil {
		return sdk.Metric{}, fmt.Errorf("%s: %w", what, err)
	}
	c, err := p(ctx, ps)
	if err != nil {
		return sdk.Metric{}, fmt.Errorf("%s: %w", what, err)
	}
	if c == nil {
		return sdk.Metric{}, fmt.Errorf("%s: probe returned no comparison", what)
	}
	m, ok := findMetric(c, name)
	if !ok {
		have := make([]string, len(c.Metrics))
		for i, m := range c.Metrics {
			have[i] = m.Name
		}
		return sdk.Metric{}, fmt.Errorf("%s: metric %q is not in the comparison (have %s)", what, name, strings.Join(have, ", "))
	}
	return m, nil
}

// gain is the metric's change for the better: +Effect where higher is
// better, −Effect where lower is.
func gain(m sdk.Metric) float64 {
	if m.HigherIsBetter {
		return m.Effect
	}
	return -m.Effect
}

// move returns from+d clipped to b, rounded to hide float noise
// (0.75+0.1 is 0.8500000000000001).
func move(from, d float64, b strategy.Bounds) float64 {
	to := math.Round((from+d)*1e9) / 1e9
	return min(max(to, b.Lo), b.Hi)
}

func sortedParams(s *strategy.Strategy) []string {
	names := make([]string, 0, len(s.Parameters))
	for k := range s.Parameters {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

var errProbePanicked = errors.New("probe panicked")

// MemoProbe wraps p so that a strategy (by content hash) is replayed once:
// Greedy and Conservative probe the same strategies, and a second call
// returns the first call's comparison (or error). It is safe for
// concurrent use; concurrent calls for one strategy wait for the first.
// Errors from a cancelled context are not remembered; a probe that
// panicked is remembered as an error ("probe panicked") after the panic
// reaches its caller.
func MemoProbe(p Probe) Probe {
	type entry struct {
		done chan struct{}
		c    *sdk.Comparison
		err  error
	}
	var mu sync.Mutex
	memo := map[string]*entry{}
	return func(ctx context.Context, cand *strategy.Strategy) (*sdk.Comparison, error) {
		key := cand.Hash()
		for {
			mu.Lock()
			e, ok := memo[key]
			if !ok {
				e = &entry{done: make(chan struct{}), err: errProbePanicked}
				memo[key] = e
				mu.Unlock()
				func() {
					defer close(e.done) // waiters must not hang if p panics
					e.c, e.err = p(ctx, cand)
					if errors.Is(e.err, context.Canceled) || errors.Is(e.err, context.DeadlineExceeded) {
						mu.Lock()
						delete(memo, key)
						mu.Unlock()
					}
				}()
				return e.c, e.err
			}
			mu.Unlock()
			select {
			case <-e.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if errors.Is(e.err, context.Canceled) || errors.Is(e.err, context.DeadlineExceeded) {
				continue // the first caller gave up; try again under our context
			}
			return e.c, e.err
		}
	}
}

// noStep is why a parameter mutator cannot move base.
func noStep(mutator string, base *strategy.Strategy) error {
	if len(base.Parameters) == 0 {
		return nothingProposed(mutator, "the strategy has no [parameters] to move")
	}
	return nothingProposed(mutator, "evolution.max_parameter_delta is 0: no parameter may move")
}

// metricName is the metric probes read ("" is success_rate).
func metricName(m string) string {
	if m == "" {
		return MetricSuccessRate
	}
	return m
}
