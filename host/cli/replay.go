package cli

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/evolve"
	"github.com/sextant-dev/sextant/host/pipeline"
	"github.com/sextant-dev/sextant/host/plugin"
	"github.com/sextant-dev/sextant/host/replay"
	"github.com/sextant-dev/sextant/host/report"
	"github.com/sextant-dev/sextant/host/run"
	"github.com/sextant-dev/sextant/host/store"
	"github.com/sextant-dev/sextant/host/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

type replayFlags struct {
	strategies []string
	dataset    string
	sample     int
	workers    int
	seed       int64
	onMiss     string
	shard      string
	reports    []string
	results    string
	store      storeFlags
}

func (f *replayFlags) add(c *cobra.Command) {
	c.Flags().StringVar(&f.dataset, "dataset", "", "JSONL dataset to replay (default: the pipeline's [replay] dataset, else its store)")
	c.Flags().IntVar(&f.sample, "sample", -1, "replay at most N tasks (stratified, seeded; default: [replay] sample, else all)")
	c.Flags().IntVar(&f.workers, "workers", 0, "parallel workers (default: [replay] workers)")
	c.Flags().Int64Var(&f.seed, "seed", 0, "sampling and bootstrap seed (default: [replay] seed)")
	c.Flags().StringVar(&f.onMiss, "on-miss", "", "a call with no recording: fail, skip or live (default: [replay] on_miss)")
	c.Flags().StringVar(&f.shard, "shard", "", "I/N: replay only shard I of N (1-based); combine with sextant merge")
	c.Flags().StringArrayVar(&f.reports, "report", nil, "FORMAT=PATH: json, junit, md, html or text (repeatable)")
	c.Flags().StringVar(&f.results, "results", "", "write per-task results (JSONL) for sextant merge")
	f.store.add(c, false)
}

func (a *app) replayCommand() *cobra.Command {
	var f replayFlags
	c := &cobra.Command{
		Use:   "replay PIPELINE",
		Short: "Replay recorded tasks under the baseline (and candidate strategies), sandboxed and offline",
		Long: `replay re-runs recorded tasks with every outside call served from the task's
recordings (exact canonical-hash match), recorded human answers and the task's
recorded clock. Under the strategy a task was recorded with, the replay must
reproduce its trace; the report names the first divergence otherwise.

With --strategy, each task is also replayed under the candidate, the two are
compared with paired statistics, and the pipeline's gates judge the candidate.
Exit status: 0 pass, 1 a gate failed or a self-replay diverged, 2 invalid
input, 3 a gate asks for review.`,
		Example: `  sextant replay pipelines/email-triage/pipeline.toml
  sextant replay pipelines/email-triage/pipeline.toml --strategy candidate.toml --report junit=gates.xml --report md=summary.md
  sextant replay pipeline.toml --shard 1/4 --results shard1.jsonl`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.replayAndJudge(cmd.Context(), args[0], &f, false)
		},
	}
	c.Flags().StringArrayVar(&f.strategies, "strategy", nil, "candidate strategy file (repeatable; the first is reported)")
	f.add(c)
	return c
}

func (a *app) gateCommand() *cobra.Command {
	var f replayFlags
	var candidate string
	c := &cobra.Command{
		Use:   "gate PIPELINE --candidate FILE",
		Short: "Replay, compare and run the gate chain on a candidate strategy",
		Long: `gate replays the recorded tasks under the pipeline's strategy and the
candidate, compares them with paired statistics (McNemar's exact test and
paired bootstrap intervals) and evaluates every gate of the pipeline.
Exit status: 0 pass, 1 a gate failed, 2 invalid input, 3 review needed.`,
		Example: `  sextant gate pipelines/email-triage/pipeline.toml --candidate pipelines/email-triage/candidates/regressing.toml
  sextant gate pipeline.toml --candidate cand.toml --report junit=gates.xml --report html=report.html`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.strategies = []string{candidate}
			return a.replayAndJudge(cmd.Context(), args[0], &f, true)
		},
	}
	c.Flags().StringVar(&candidate, "candidate", "", "candidate strategy file (required)")
	_ = c.MarkFlagRequired("candidate")
	f.add(c)
	return c
}

// replayAndJudge replays and, with a candidate, compares and gates.
func (a *app) replayAndJudge(ctx context.Context, path string, f *replayFlags, needCandidate bool) error {
	reg, err := a.registry(filepath.Dir(path))
	if err != nil {
		return err
	}
	prep, err := run.Prepare(ctx, path, reg, a.logger, run.WithoutCredentials())
	if err != nil {
		return err
	}
	p := prep.Pipeline
	prep.Close(context.WithoutCancel(ctx))
	strategies := []*strategy.Strategy{prep.Strategy}
	files := []string{p.Path(p.Strategy.File)}
	for _, sf := range f.strategies {
		st, err := strategy.Load(sf)
		if err != nil {
			return err
		}
		strategies, files = append(strategies, st), append(files, sf)
	}
	if needCandidate && len(strategies) < 2 {
		return usageErr(errors.New("--candidate is required"))
	}
	for _, spec := range f.reports {
		if _, _, err := report.ParseSpec(spec); err != nil {
			return usageErr(fmt.Errorf("--report: %w", err))
		}
	}
	cfg, err := a.replayConfig(p, f)
	if err != nil {
		return err
	}
	prepOpts, err := replayCredentials(p, cfg.OnMiss)
	if err != nil {
		return err
	}
	src, cleanup, err := a.replaySource(ctx, p, f)
	if err != nil {
		return err
	}
	defer cleanup()
	cache, closeCache, err := a.resultCache(ctx, src)
	if err != nil {
		return err
	}
	defer closeCache()
	rc := replay.Config{Source: src, Pipeline: p.Name, Strategies: strategies, OnMiss: cfg.OnMiss, Workers: cfg.Workers,
		Sample: cfg.Sample, StratifyBy: cfg.StratifyBy, Seed: cfg.Seed, Logger: a.logger, Cache: cache,
		Versions: versions(reg, p), Prepare: func(ctx context.Context) (*run.Prepared, error) {
			return run.Prepare(ctx, path, reg, a.logger, prepOpts...)
		}}
	if rc.Shard, rc.Shards, err = parseShard(f.shard); err != nil {
		return err
	}
	var results []replay.Result
	var out *bufio.Writer
	if f.results != "" {
		file, err := os.Create(f.results)
		if err != nil {
			return err
		}
		defer file.Close()
		out = bufio.NewWriter(file)
		if err := writeResultsHeader(out, path, files, f.shard); err != nil {
			return err
		}
	}
	// Progress on stderr, on a terminal only (never in CI logs).
	progress := report.NewProgress(a.stderr, 0, isTerminal(a.stderr))
	err = replay.Run(ctx, rc, func(r replay.Result) error {
		progress.Add(1)
		if out != nil {
			b, _ := json.Marshal(resultLine{Type: "result", Result: r})
			out.Write(append(b, '\n'))
		}
		// Judging needs the outcome, not the task's output and tags: keep
		// each result small, so 100 000 tasks fit in a bounded heap.
		r.Output, r.Tags = nil, nil
		results = append(results, r)
		return nil
	})
	progress.Done()
	if err != nil {
		return err
	}
	if out != nil {
		if err := out.Flush(); err != nil {
			return err
		}
	}
	return a.judge(ctx, reg, p, strategies, results, cfg.Seed, f.reports)
}

// resultLine is one line of a results file.
type resultLine struct {
	Type   string        `json:"type"`
	Result replay.Result `json:"result"`
}

type resultsHeader struct {
	Type       string   `json:"type"`
	Pipeline   string   `json:"pipeline"`
	Strategies []string `json:"strategies"` // the strategy files' text, baseline first
	Shard      string   `json:"shard,omitempty"`
}

func writeResultsHeader(w io.Writer, pipe string, files []string, shard string) error {
	abs, _ := filepath.Abs(pipe)
	h := resultsHeader{Type: "header", Pipeline: abs, Shard: shard}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		h.Strategies = append(h.Strategies, string(b))
	}
	b, _ := json.Marshal(h)
	_, err := w.Write(append(b, '\n'))
	return err
}

func (a *app) mergeCommand() *cobra.Command {
	var reports []string
	c := &cobra.Command{
		Use:   "merge RESULT...",
		Short: "Combine sharded replay results into one report, as an unsharded replay gives",
		Example: `  sextant merge shard1.jsonl shard2.jsonl --report json=report.json
  sextant merge results/*.jsonl --report junit=gates.xml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			var header *resultsHeader
			byKey := map[string]replay.Result{}
			for _, f := range args {
				h, rs, err := readResults(f)
				if err != nil {
					return withInvalid(err)
				}
				if header == nil {
					header = h
				} else if h.Pipeline != header.Pipeline || strings.Join(h.Strategies, "\x00") != strings.Join(header.Strategies, "\x00") {
					return withInvalid(fmt.Errorf("%s: replayed another pipeline or other strategies than %s", f, args[0]))
				}
				for _, r := range rs {
					key := r.Task + "\x00" + r.Hash
					if _, dup := byKey[key]; dup {
						return withInvalid(fmt.Errorf("%s: task %s replayed twice under %s (overlapping shards?)", f, r.Task, r.Strategy))
					}
					byKey[key] = r
				}
			}
			var strategies []*strategy.Strategy
			for i, text := range header.Strategies {
				st, err := strategy.Parse(fmt.Sprintf("strategy %d", i+1), []byte(text))
				if err != nil {
					return withInvalid(err)
				}
				strategies = append(strategies, st)
			}
			results := make([]replay.Result, 0, len(byKey))
			order := map[string]int{}
			for i, st := range strategies {
				order[st.Hash()] = i
			}
			for _, r := range byKey {
				results = append(results, r)
			}
			sort.Slice(results, func(i, j int) bool {
				if results[i].Task != results[j].Task {
					return results[i].Task < results[j].Task
				}
				return order[results[i].Hash] < order[results[j].Hash]
			})
			reg, err := a.registry(filepath.Dir(header.Pipeline))
			if err != nil {
				return err
			}
			p, err := pipeline.Load(ctx, header.Pipeline, reg, pipeline.Options{})
			if err != nil {
				return err
			}
			seed := p.Replay.Seed
			return a.judge(ctx, reg, p, strategies, results, seed, reports)
		},
	}
	c.Flags().StringArrayVar(&reports, "report", nil, "FORMAT=PATH: json, junit, md, html or text (repeatable)")
	return c
}

func readResults(path string) (*resultsHeader, []replay.Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var h *resultsHeader
	var out []replay.Result
	for n := 1; sc.Scan(); n++ {
		var probe struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(sc.Bytes(), &probe); err != nil {
			return nil, nil, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		switch probe.Type {
		case "header":
			h = new(resultsHeader)
			if err := json.Unmarshal(sc.Bytes(), h); err != nil {
				return nil, nil, fmt.Errorf("%s:%d: %v", path, n, err)
			}
		case "result":
			var l resultLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				return nil, nil, fmt.Errorf("%s:%d: %v", path, n, err)
			}
			out = append(out, l.Result)
		default:
			return nil, nil, fmt.Errorf("%s:%d: unknown line type %q", path, n, probe.Type)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if h == nil {
		return nil, nil, fmt.Errorf("%s: not a results file (no header line)", path)
	}
	return h, out, nil
}

type effective struct {
	Sample, Workers int
	Seed            int64
	OnMiss          string
	StratifyBy      string
}

func (a *app) replayConfig(p *pipeline.Pipeline, f *replayFlags) (effective, error) {
	e := effective{Sample: p.Replay.Sample, Workers: p.Replay.Workers, Seed: p.Replay.Seed, OnMiss: p.Replay.OnMiss, StratifyBy: p.Replay.StratifyBy}
	if f.sample >= 0 {
		e.Sample = f.sample
	}
	if f.workers > 0 {
		e.Workers = f.workers
	}
	if f.seed != 0 {
		e.Seed = f.seed
	}
	if f.onMiss != "" {
		switch f.onMiss {
		case replay.MissFail, replay.MissSkip, replay.MissLive:
			e.OnMiss = f.onMiss
		default:
			return e, usageErr(fmt.Errorf("--on-miss: %q is not fail, skip or live", f.onMiss))
		}
	}
	return e, nil
}

func parseShard(s string) (int, int, error) {
	if s == "" {
		return 0, 0, nil
	}
	i, n, ok := strings.Cut(s, "/")
	a, err1 := strconv.Atoi(i)
	b, err2 := strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil || b < 1 || a < 1 || a > b {
		return 0, 0, usageErr(fmt.Errorf("--shard %q: want I/N with 1 ≤ I ≤ N", s))
	}
	return a - 1, b, nil
}

// replaySource opens what to replay: a dataset imported once into a cache
// store keyed by its content, or the pipeline's own store.
func (a *app) replaySource(ctx context.Context, p *pipeline.Pipeline, f *replayFlags) (*store.Store, func(), error) {
	dataset := f.dataset
	if dataset == "" && p.Replay.Dataset != "" {
		dataset = p.Path(p.Replay.Dataset)
	}
	if dataset == "" {
		// Read-only: a replay never writes the tasks it replays, and Badger's
		// writable open maps (and faults in) every value-log file.
		s, err := a.openStoreWith(ctx, f.store.resolveFor(p), true, p)
		if err != nil {
			return nil, nil, err
		}
		return s, once(func() { s.Close() }), nil
	}
	data, err := os.ReadFile(dataset)
	if err != nil {
		return nil, nil, withInvalid(fmt.Errorf("dataset: %w", err))
	}
	sum := sha256.Sum256(data)
	dir := filepath.Join(cacheBase(), "datasets", hex.EncodeToString(sum[:12]))
	ready := filepath.Join(dir, ".imported")
	if _, err := os.Stat(ready); err != nil {
		os.RemoveAll(dir)
		s, err := a.openStore(ctx, dir, false)
		if err != nil {
			return nil, nil, err
		}
		if _, err := s.Import(ctx, strings.NewReader(string(data)), dataset); err != nil {
			s.Close()
			os.RemoveAll(dir)
			return nil, nil, withInvalid(err)
		}
		s.Close()
		if err := os.WriteFile(ready, nil, 0o644); err != nil {
			return nil, nil, err
		}
	}
	s, err := a.openStore(ctx, dir, true)
	if err != nil {
		return nil, nil, err
	}
	return s, once(func() { s.Close() }), nil
}

// resultCache opens the replay result cache of a source store: a small
// store of its own under the user cache directory, keyed by the source's
// path, so the source can stay read-only.
func (a *app) resultCache(ctx context.Context, src *store.Store) (*store.Collection[replay.Result], func(), error) {
	abs, err := filepath.Abs(src.Dir())
	if err != nil {
		return nil, nil, err
	}
	sum := sha256.Sum256([]byte(abs))
	dir := filepath.Join(cacheBase(), "replay-results", hex.EncodeToString(sum[:12]))
	s, err := a.openStore(ctx, dir, false)
	if err != nil {
		return nil, nil, err
	}
	c, err := store.NewCollection[replay.Result](s, store.CollReplayResults)
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	return c, once(func() { s.Close() }), nil
}

// cacheBase is sextant's cache directory: $SEXTANT_CACHE, else the user
// cache directory's sextant.
func cacheBase() string {
	if d := os.Getenv("SEXTANT_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "sextant")
	}
	return filepath.Join(os.TempDir(), "sextant")
}

// once makes a cleanup safe to call twice (explicitly, then deferred).
func once(f func()) func() {
	var done bool
	return func() {
		if !done {
			done = true
			f()
		}
	}
}

// versions identifies the routine and plugins for the result cache.
func versions(reg *plugin.Registry, p *pipeline.Pipeline) string {
	var parts []string
	if b, err := os.ReadFile(p.Path(p.Routine.File)); err == nil {
		sum := sha256.Sum256(b)
		parts = append(parts, "routine="+hex.EncodeToString(sum[:8]))
	}
	names := []string{p.Routine.Navigator}
	for _, pr := range p.Providers {
		names = append(names, pr.Use)
	}
	sort.Strings(names)
	for _, n := range names {
		if e, ok := reg.Lookup(n); ok {
			parts = append(parts, n+"@"+e.Version+"/"+e.Transport)
		}
	}
	for _, pr := range sortedProviderNames(p) {
		if rules := p.Providers[pr].Rules; rules != "" {
			if b, err := os.ReadFile(p.Path(rules)); err == nil {
				sum := sha256.Sum256(b)
				parts = append(parts, "rules:"+pr+"="+hex.EncodeToString(sum[:8]))
			}
		}
	}
	return strings.Join(parts, ",")
}

func sortedProviderNames(p *pipeline.Pipeline) []string {
	var out []string
	for n := range p.Providers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// judge turns replay results into a report: fidelity of the self-replays,
// and with a candidate the paired comparison and the gate chain. It prints
// the terminal summary, writes the reports and returns the exit status.
func (a *app) judge(ctx context.Context, reg *plugin.Registry, p *pipeline.Pipeline, strategies []*strategy.Strategy,
	results []replay.Result, seed int64, specs []string) error {
	base := strategies[0]
	r := &report.Report{Pipeline: p.Name, Baseline: ref(base)}
	self, reproduced := 0, 0
	byTask := map[string]map[string]replay.Result{}
	tasks := map[string]bool{}
	for _, res := range results {
		tasks[res.Task] = true
		if byTask[res.Task] == nil {
			byTask[res.Task] = map[string]replay.Result{}
		}
		byTask[res.Task][res.Hash] = res
		if res.SelfReplay && !res.Skipped {
			self++
			if res.Reproduced {
				reproduced++
			} else if res.Divergence != nil {
				r.Divergences = append(r.Divergences, report.Divergence{Task: res.Task, Node: res.Divergence.Node,
					Expected: res.Divergence.Expected, Got: res.Divergence.Got})
			} else if res.Error != "" {
				r.Divergences = append(r.Divergences, report.Divergence{Task: res.Task, Expected: "a completed run", Got: res.Error})
			}
		}
	}
	r.Tasks = len(tasks)
	if self > 0 {
		r.Fidelity = float64(reproduced) / float64(self)
	}
	ruling := sdk.Pass
	if len(strategies) > 1 {
		cand := strategies[1]
		r.Candidate = ref(cand)
		opts := evolve.Options{Seed: uint64(seed)}
		cmp := evolve.Compare(base, cand, pairOutcomes(results, base, cand), r.Fidelity, opts)
		r.Metrics = cmp.Metrics
		gates, closeGates, err := gateSpecs(ctx, reg, p, opts)
		if err != nil {
			return err
		}
		defer closeGates()
		res := evolve.Evaluate(ctx, cmp, gates)
		ruling = res.Ruling
		for _, g := range res.Gates {
			r.Gates = append(r.Gates, report.GateResult{Name: g.Name, Ruling: g.Ruling, Reasons: g.Reasons, Metrics: g.Metrics})
		}
		regressed, improved := evolve.Flips(cmp.Tasks)
		r.Regressed = regressed
		for _, t := range regressed {
			r.Flipped = append(r.Flipped, report.Flip{Task: t, Metric: evolve.MetricSuccessRate, From: "pass", To: "fail"})
		}
		for _, t := range improved {
			r.Flipped = append(r.Flipped, report.Flip{Task: t, Metric: evolve.MetricSuccessRate, From: "fail", To: "pass"})
		}
	}
	if ruling == sdk.Pass && len(r.Divergences) > 0 {
		ruling = sdk.Fail // a self-replay that does not reproduce is a regression of determinism
	}
	r.Ruling, r.ExitCode = ruling, evolve.ExitCode(ruling)
	if err := report.WriteText(a.stdout, r, report.WithColor(colour(a.stdout))); err != nil {
		return err
	}
	for _, spec := range specs {
		format, path, _ := report.ParseSpec(spec)
		write, err := report.Lookup(format)
		if err != nil {
			return usageErr(err)
		}
		file, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := write(file, r); err != nil {
			file.Close()
			return err
		}
		if err := file.Close(); err != nil {
			return err
		}
	}
	if r.ExitCode != ExitOK {
		return withCode(r.ExitCode, errSilent)
	}
	return nil
}

// pairOutcomes pairs each task's baseline and candidate results, in task
// order, leaving out tasks skipped under either.
func pairOutcomes(results []replay.Result, base, cand *strategy.Strategy) []sdk.TaskOutcome {
	byTask := map[string]map[string]replay.Result{}
	for _, res := range results {
		if byTask[res.Task] == nil {
			byTask[res.Task] = map[string]replay.Result{}
		}
		byTask[res.Task][res.Hash] = res
	}
	ids := make([]string, 0, len(byTask))
	for id := range byTask {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var out []sdk.TaskOutcome
	bh, ch := base.Hash(), cand.Hash()
	for _, id := range ids {
		b, okb := byTask[id][bh]
		c, okc := byTask[id][ch]
		if !okb || !okc || b.Skipped || c.Skipped {
			continue
		}
		out = append(out, sdk.TaskOutcome{Task: id, Baseline: b.Outcome, Candidate: c.Outcome})
	}
	return out
}

// gateSpecs builds the pipeline's gate chain: built-in gates, and gate
// plugins opened through the registry (closed by the returned func).
func gateSpecs(ctx context.Context, reg *plugin.Registry, p *pipeline.Pipeline, opts evolve.Options) ([]evolve.GateSpec, func(), error) {
	var gates []evolve.GateSpec
	var handles []*plugin.Handle
	closeAll := func() {
		for _, h := range handles {
			h.Close(context.WithoutCancel(ctx))
		}
	}
	for _, g := range p.Gates {
		var gate sdk.Gate
		if _, builtin := pipeline.BuiltinGates[g.Use]; builtin {
			var err error
			if gate, err = evolve.Builtin(g.Use, opts); err != nil {
				closeAll()
				return nil, nil, err
			}
		} else {
			h, err := reg.Open(ctx, g.Use, grantFor(p, g.Use))
			if err != nil {
				closeAll()
				return nil, nil, err
			}
			handles = append(handles, h)
			var ok bool
			if gate, ok = h.Plugin.(sdk.Gate); !ok {
				closeAll()
				return nil, nil, withInvalid(fmt.Errorf("plugin %q is not a gate", g.Use))
			}
		}
		gates = append(gates, evolve.GateSpec{Name: g.Use, Gate: gate, Config: g.Config})
	}
	return gates, closeAll, nil
}

func ref(s *strategy.Strategy) report.Strategy {
	return report.Strategy{Name: s.Metadata.Name, Version: s.Metadata.Version, Hash: s.Hash()}
}

func grantFor(p *pipeline.Pipeline, name string) plugin.Grant {
	g, ok := p.Plugins[name]
	if !ok {
		return plugin.Grant{}
	}
	mem, _ := plugin.ParseSize(g.Memory)
	return plugin.Grant{AllowHTTP: g.AllowHTTP, Timeout: g.Timeout.Std(), Memory: mem, Pool: g.Pool}
}

// colour: only on a terminal, never with NO_COLOR.
func colour(w io.Writer) bool {
	return os.Getenv("NO_COLOR") == "" && isTerminal(w)
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
