// Package replay re-runs recorded tasks under one or more strategies, with
// every outside call served from the task's recordings: the recorded
// provider (exact match on the canonical request hash), recorded human
// answers, the task's recorded clock. It streams: tasks are read from the
// store one at a time and results are handed to a callback, so a replay of
// 100 000 tasks never holds them all in memory.
//
// A replay never writes the tasks it replays; its only writes are cached
// results, keyed by everything that can change one (see Config.Cache),
// and, with Config.Record, the answers of calls it made live.
package replay

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/run"
	scoring "github.com/sextant-dev/sextant/host/internal/score"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

// On-miss policies: what a replay does with a call that has no recording.
const (
	MissFail = "fail" // the task's replay fails, naming the call
	MissSkip = "skip" // the task is left out of the comparison
	MissLive = "live" // the call goes to the real provider
)

// Config says what to replay and how.
type Config struct {
	// Prepare opens the pipeline for one worker (each worker has its own
	// plugin instances). It is called Workers times, unless Pool is set.
	Prepare func(ctx context.Context) (*run.Prepared, error)
	// Pool, when set, replaces Prepare: workers take their plugins from
	// it and give them back when the replay ends, for the next replay
	// over the same pipeline.
	Pool *Pool
	// Source holds the recorded tasks and their recordings.
	Source *store.Store
	// Pipeline selects the source's tasks by pipeline name.
	Pipeline string
	// Strategies are replayed for every task, baseline first.
	Strategies []*strategy.Strategy
	OnMiss     string
	Workers    int
	// Sample replays at most this many tasks (0 = all), chosen by a hash of
	// task id and Seed, proportionally within strata when StratifyBy is set.
	Sample     int
	StratifyBy string // "tags.NAME": the value of tag NAME=value or NAME:value
	Seed       int64
	// Shard I of N replays only the tasks whose id hashes to I (0-based).
	Shard, Shards int
	// Cache keeps results across replays; nil disables it. A result is
	// cached under a key of the recorded task (its input, truth, tags,
	// clock, rewards, live trace), the strategy's content hash, on_miss,
	// and the pipeline's fingerprint: its effective content (steps,
	// prompts, templates, score, limits, provider settings without
	// secrets, plugin grants, prices, redaction), the routine's and rules
	// files' bytes, every plugin's manifest and artifact bytes (builtins by
	// Version) and Version. A cached result is used only while every
	// recording its replay read is unchanged. Replays with on_miss = live
	// that reached a live provider are not cached.
	Cache Cache
	// Plugins resolves the pipeline's plugins for the cache key; it is
	// required with a Cache.
	Plugins *plugin.Registry
	// Version is sextant's version (a build identity for development
	// builds): builtin plugins and the runtime are keyed by it.
	Version string
	Logger  *slog.Logger
	// MaxLiveCostUSD caps what the calls sent to a live provider (OnMiss
	// "live") may cost in this replay, priced as runs price them; the
	// replay fails once they cost more. 0 means no cap.
	MaxLiveCostUSD float64
	// OnSelected, when set, is told how many tasks the replay selected
	// (sampled, this shard's) before the first is replayed: progress
	// reporting's total is that times len(Strategies).
	OnSelected func(tasks int)
	// OnSpans, when set, is given each replayed execution's spans as
	// they are recorded (live telemetry; see run.Config.OnSpans). A
	// result served from the cache runs nothing and exports nothing.
	OnSpans func(spans []store.Span)
	// Record, when set, keeps the answers of calls made live (on_miss =
	// "live"): they are written to it, and a later replay finds them
	// there, so the same calls are not made twice. It may be Source
	// opened writable.
	Record *store.Store
	// Candidate says the pipeline replayed is a candidate for the one its
	// tasks were recorded with (gate --candidate-pipeline): it changed
	// what they ran with on purpose, so no changed-since-recorded check
	// refuses it, and none of its results is a self-replay.
	Candidate bool
	// live is what the live calls cost so far (set by Run).
	live *liveSpend
}

// ErrLiveCost marks a replay stopped by Config.MaxLiveCostUSD.
var ErrLiveCost = errors.New("live calls over their cost cap")

// liveSpend adds up the cost of live calls across workers.
type liveSpend struct {
	mu   sync.Mutex
	usd  float64
	over bool // the cap was passed: no task starts after
}

// add counts usd and reports whether the total went over max.
func (l *liveSpend) add(usd, max float64) (float64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.usd += usd
	l.over = l.over || (max > 0 && l.usd > max)
	return l.usd, l.over
}

// passed reports whether the cap was passed.
func (l *liveSpend) passed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.over
}

// Divergence is the first place a self-replay left the recorded trace.
type Divergence struct {
	Index    int    `json:"index"`
	Node     string `json:"node"`
	Expected string `json:"expected"`
	Got      string `json:"got"`
}

// Result is one task replayed under one strategy.
type Result struct {
	Task     string         `json:"task"`
	Strategy string         `json:"strategy"` // version
	Hash     string         `json:"hash"`     // strategy content hash
	Tags     []string       `json:"tags,omitempty"`
	Status   store.Status   `json:"status"`
	Error    string         `json:"error,omitempty"`
	Outcome  sdk.TaskResult `json:"outcome"`
	// Output is what [score] saw as output (curation reflects on it).
	Output map[string]any `json:"output,omitempty"`
	// Cited are the playbook bullets the replay's replies cited.
	Cited []string `json:"cited,omitempty"`
	// ToolCalls are the replay's tool calls, in order, as its spans tell
	// them: what a flipped task shows beside the other strategy's.
	ToolCalls []run.ToolCall `json:"tool_calls,omitempty"`
	// LatencyMS is how long its calls took: the recorded latency of each
	// call answered from a recording, the measured one of a call made
	// live (a replay's own clock stands still).
	LatencyMS float64 `json:"latency_ms,omitempty"`
	// OutputDigest identifies Output (its JSON, keys sorted): equal
	// digests, equal outputs. It outlives Output, which callers drop to
	// keep many results small, so a comparison can still tell whether two
	// replays ended alike.
	OutputDigest string `json:"output_digest,omitempty"`
	// SelfReplay is set when the strategy is the one the task was recorded
	// under; Reproduced then says whether the trace matched exactly.
	SelfReplay bool        `json:"self_replay,omitempty"`
	Reproduced bool        `json:"reproduced,omitempty"`
	Divergence *Divergence `json:"divergence,omitempty"`
	Misses     int         `json:"misses,omitempty"`
	// Live are the calls made live for want of a recording.
	Live    []LiveCall `json:"live,omitempty"`
	Skipped bool       `json:"skipped,omitempty"`
	Cached  bool       `json:"-"`
}

// trimEvery is how many tasks pass between trims of the source store's
// resident mapped pages.
const trimEvery = 2000

// Run replays the selected tasks, calling emit for each result in a
// deterministic order (task order, then strategy order), whatever the
// number of workers.
func Run(ctx context.Context, cfg Config, emit func(Result) error) error {
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.OnMiss == "" {
		cfg.OnMiss = MissFail
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if len(cfg.Strategies) == 0 {
		return errors.New("replay: no strategy to replay")
	}
	if cfg.MaxLiveCostUSD < 0 {
		return fmt.Errorf("replay: max live cost %v is negative", cfg.MaxLiveCostUSD)
	}
	cfg.live = &liveSpend{}
	prepare, release := cfg.Prepare, func(ctx context.Context, prep *run.Prepared) { prep.Close(ctx) }
	if cfg.Pool != nil {
		prepare, release = cfg.Pool.Prepare, cfg.Pool.release
	}
	workers := make([]*worker, cfg.Workers)
	for i := range workers {
		prep, err := prepare(ctx)
		if err != nil {
			for _, w := range workers[:i] {
				release(context.WithoutCancel(ctx), w.prep)
			}
			return err
		}
		workers[i] = &worker{cfg: &cfg, prep: prep, live: prep.Providers}
		if cfg.OnMiss == MissLive && prep.Providers != nil {
			// Fresh circuit breakers for this replay: a Prepared from a
			// Pool served the replay before, and its failures must not
			// weigh on this one's.
			workers[i].live = prep.Providers.Map(func(p *run.Provider) *run.Provider { return p })
		}
	}
	defer func() {
		for _, w := range workers {
			release(context.WithoutCancel(ctx), w.prep)
		}
	}()
	score, err := compileScore(workers[0].prep)
	if err != nil {
		return err
	}
	if err := checkProviders(workers[0].prep); err != nil {
		return err
	}
	var check *recordedCheck
	if !cfg.Candidate {
		check = newRecordedCheck(cfg, workers[0].prep)
	}
	ids, err := selectTasks(ctx, cfg, check)
	if err != nil {
		return err
	}
	if cfg.OnSelected != nil {
		cfg.OnSelected(len(ids))
	}
	if cfg.Cache != nil {
		if cfg.Plugins == nil {
			return errors.New("replay: a result cache needs the plugin registry for its key")
		}
		fp, err := fingerprint(workers[0].prep.Pipeline, cfg.Plugins, cfg.Version)
		if err != nil {
			// Without a complete key a cached result could be stale: replay
			// everything, cache nothing.
			cfg.Logger.Warn("replay result cache off", "err", err)
			cfg.Cache = nil
		}
		for _, w := range workers {
			w.fingerprint = fp
		}
	}
	// Tasks fan out to the workers; results come back to an ordered
	// emitter with a bounded window, so memory does not grow with the
	// number of tasks.
	type job struct {
		i  int
		id string
	}
	type done struct {
		i   int
		res []Result
		err error
	}
	jobs := make(chan job)
	results := make(chan done, cfg.Workers)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	// Run returns only once its workers have stopped: a worker may be
	// reading cfg.Source, which the caller closes once Run returns.
	defer func() {
		cancel()
		if testRunWaits != nil {
			testRunWaits()
		}
		wg.Wait()
	}()
	for _, w := range workers {
		wg.Add(1)
		go func(w *worker) {
			defer wg.Done()
			for j := range jobs {
				if testBeforeTask != nil {
					testBeforeTask(ctx, j.i)
				}
				res, err := w.task(ctx, j.id, score)
				select {
				case results <- done{j.i, res, err}:
				case <-ctx.Done():
					return
				}
			}
		}(w)
	}
	window := make(chan struct{}, cfg.Workers*4) // tasks in flight or waiting to be emitted
	go func() {
		defer close(jobs)
		for i, id := range ids {
			select {
			case window <- struct{}{}:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- job{i, id}:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()
	pending := map[int]done{}
	next := 0
	for d := range results {
		pending[d.i] = d
		for {
			p, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			<-window
			if p.err != nil {
				return p.err
			}
			for _, r := range p.res {
				if err := emit(r); err != nil {
					return err
				}
			}
			// Pages of the dataset read once need not stay resident.
			if next%trimEvery == 0 {
				cfg.Source.TrimResident()
			}
		}
	}
	if next != len(ids) && ctx.Err() != nil {
		return ctx.Err()
	}
	return nil
}

// testBeforeTask and testRunWaits, when set (by tests only), are called
// by a worker before the task of index i and by Run as it waits for its
// workers to stop.
var (
	testBeforeTask func(ctx context.Context, i int)
	testRunWaits   func()
)

// selectTasks lists the ids to replay: the pipeline's tasks in id order,
// this shard's, sampled. Only ids are kept (a few bytes per task).
func selectTasks(ctx context.Context, cfg Config, check *recordedCheck) ([]string, error) {
	type cand struct {
		id, stratum string
		rank        uint64
	}
	var all []cand
	q := store.Query{Pipeline: cfg.Pipeline}
	seen := 0
	err := cfg.Source.EachTask(ctx, q, func(t *store.Task) error {
		if seen++; seen%trimEvery == 0 {
			cfg.Source.TrimResident() // the scan reads every task once
		}
		if t.Status != store.StatusCompleted {
			return nil // only finished tasks have a whole trace to replay
		}
		check.task(t)
		all = append(all, cand{id: t.ID, stratum: stratum(t.Tags, cfg.StratifyBy), rank: rank(t.ID, cfg.Seed)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := check.err(); err != nil {
		return nil, err
	}
	sort.Slice(all, func(i, j int) bool { return all[i].id < all[j].id })
	// Sample over every task first, then keep this shard's: shards of one
	// replay partition exactly the tasks an unsharded replay would take.
	inShard := func(ids []string) []string {
		if cfg.Shards <= 1 {
			return ids
		}
		out := ids[:0]
		for _, id := range ids {
			if int(rank(id, 0)%uint64(cfg.Shards)) == cfg.Shard {
				out = append(out, id)
			}
		}
		return out
	}
	if cfg.Sample <= 0 || cfg.Sample >= len(all) {
		ids := make([]string, len(all))
		for i, c := range all {
			ids[i] = c.id
		}
		return inShard(ids), nil
	}
	// Proportional allocation per stratum (largest remainder), then the
	// lowest seeded ranks within each stratum.
	groups := map[string][]cand{}
	var names []string
	for _, c := range all {
		if _, ok := groups[c.stratum]; !ok {
			names = append(names, c.stratum)
		}
		groups[c.stratum] = append(groups[c.stratum], c)
	}
	sort.Strings(names)
	quota := map[string]int{}
	type rem struct {
		name string
		frac float64
	}
	var rems []rem
	given := 0
	for _, n := range names {
		exact := float64(cfg.Sample) * float64(len(groups[n])) / float64(len(all))
		quota[n] = int(exact)
		given += quota[n]
		rems = append(rems, rem{n, exact - float64(quota[n])})
	}
	sort.SliceStable(rems, func(i, j int) bool { return rems[i].frac > rems[j].frac })
	for i := 0; given < cfg.Sample && i < len(rems); i++ {
		quota[rems[i].name]++
		given++
	}
	var ids []string
	for _, n := range names {
		g := groups[n]
		sort.Slice(g, func(i, j int) bool { return g[i].rank < g[j].rank || (g[i].rank == g[j].rank && g[i].id < g[j].id) })
		for _, c := range g[:min(quota[n], len(g))] {
			ids = append(ids, c.id)
		}
	}
	sort.Strings(ids)
	return inShard(ids), nil
}

func rank(id string, seed int64) uint64 {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(seed))
	sum := sha256.Sum256(append(b[:], id...))
	return binary.BigEndian.Uint64(sum[:8])
}

// stratum reads the stratification key from the tags: "tags.difficulty"
// matches a tag "difficulty=hard" or "difficulty:hard".
func stratum(tags []string, by string) string {
	name, ok := strings.CutPrefix(by, "tags.")
	if !ok || name == "" {
		return ""
	}
	for _, t := range tags {
		for _, sep := range []string{"=", ":"} {
			if v, ok := strings.CutPrefix(t, name+sep); ok {
				return v
			}
		}
	}
	return ""
}

// score holds the compiled [score] expressions and assertions.
type score struct {
	success *Success
	reward  *vm.Program
	asserts []*assertion
}

func compileScore(p *run.Prepared) (*score, error) {
	var s score
	var err error
	if s.success, err = CompileSuccess(p.Pipeline.Score.Success); err != nil {
		return nil, err
	}
	if src := p.Pipeline.Score.Reward; src != "" {
		if s.reward, err = expr.Compile(src); err != nil {
			return nil, fmt.Errorf("score.reward: %w", err)
		}
	}
	for i, a := range p.Pipeline.Score.Assert {
		c, err := compileAssertion(p.Pipeline, a)
		if err != nil {
			return nil, fmt.Errorf("score.assert.%d: %w", i, err)
		}
		s.asserts = append(s.asserts, c)
	}
	return &s, nil
}

// worker replays tasks with its own plugin instances.
type worker struct {
	cfg  *Config
	prep *run.Prepared
	// live is prep's providers with this replay's own circuit breakers:
	// what a call without a recording reaches under on_miss = live.
	live        *run.Providers
	fingerprint string // of the pipeline, for cache keys
	hashes      map[*strategy.Strategy]string
	// compiled is shared by the runners of one strategy: templates and
	// expressions are compiled once per worker, not per task.
	compiled map[*strategy.Strategy]*run.Compiled
}

// task replays one task under every strategy.
func (w *worker) task(ctx context.Context, id string, sc *score) ([]Result, error) {
	// The head (no spans) is enough when the execution carries its trace;
	// older recordings without one are read whole.
	tree, err := w.cfg.Source.Head(ctx, id)
	if err != nil {
		return nil, err
	}
	if live := liveExecution(tree); live != nil && live.Execution.Trace == nil && live.Execution.Status == store.StatusCompleted {
		if tree, err = w.cfg.Source.Tree(ctx, id); err != nil {
			return nil, err
		}
	}
	var input map[string]any
	if len(tree.Task.Input) > 0 {
		if err := json.Unmarshal(tree.Task.Input, &input); err != nil {
			return nil, fmt.Errorf("task %s: input: %w", id, err)
		}
	}
	var truth any
	if len(tree.Task.Truth) > 0 {
		if err := json.Unmarshal(tree.Task.Truth, &truth); err != nil {
			return nil, fmt.Errorf("task %s: truth: %w", id, err)
		}
	}
	recorded := recordedTrace(tree)
	var rewards []float64 // the unnamed dimension's
	for _, r := range tree.Rewards {
		if r.Dimension == "" {
			rewards = append(rewards, r.Value)
		}
	}
	digest := ""
	if w.cfg.Cache != nil {
		digest = taskDigest(tree)
	}
	out := make([]Result, 0, len(w.cfg.Strategies))
	for _, st := range w.cfg.Strategies {
		res, err := w.one(ctx, tree, digest, st, input, truth, rewards, recorded, sc)
		if err != nil {
			return nil, err
		}
		out = append(out, res)
	}
	return out, nil
}

func (w *worker) compiledFor(st *strategy.Strategy) *run.Compiled {
	if w.compiled == nil {
		w.compiled = map[*strategy.Strategy]*run.Compiled{}
	}
	c, ok := w.compiled[st]
	if !ok {
		c = &run.Compiled{}
		w.compiled[st] = c
	}
	return c
}

// hash returns a strategy's content hash, computed once per worker.
func (w *worker) hash(st *strategy.Strategy) string {
	if h, ok := w.hashes[st]; ok {
		return h
	}
	if w.hashes == nil {
		w.hashes = map[*strategy.Strategy]string{}
	}
	h := st.Hash()
	w.hashes[st] = h
	return h
}

// cacheKey is the key of one task's result under st: the pipeline's
// fingerprint, the recorded task's digest, the strategy, on_miss and
// whether the replay is a candidate's (Config.Candidate: a candidate equal
// in effect to its base shares neither's self-replay flags).
func (w *worker) cacheKey(task, digest string, st *strategy.Strategy) string {
	mode := w.cfg.OnMiss
	if w.cfg.Candidate {
		mode += "\x00candidate"
	}
	sum := sha256.Sum256([]byte(w.fingerprint + "\x00" + task + "\x00" + digest + "\x00" + w.hash(st) + "\x00" + mode))
	return hex.EncodeToString(sum[:16])
}

// cached returns the cached result under key if every recording its replay
// read is unchanged.
func (w *worker) cached(ctx context.Context, key string) (Result, bool) {
	b, ok := w.cfg.Cache.Get(key)
	if !ok {
		return Result{}, false
	}
	var e cacheEntry
	if err := json.Unmarshal(b, &e); err != nil {
		return Result{}, false
	}
	for k, want := range e.Reads {
		got := ""
		r, err := w.cfg.Source.Recording(ctx, k)
		if err != nil && w.cfg.Record != nil { // as the journal reads: an answer kept by an earlier live replay
			r, err = w.cfg.Record.Recording(ctx, k)
		}
		if err == nil {
			got = recordingDigest(r)
		}
		if got != want {
			return Result{}, false
		}
	}
	e.Result.Cached = true
	return e.Result, true
}

func (w *worker) one(ctx context.Context, tree *store.Tree, digest string, st *strategy.Strategy, input map[string]any, truth any,
	rewards []float64, recorded []string, sc *score) (Result, error) {
	task := tree.Task
	hash := w.hash(st)
	res := Result{Task: task.ID, Strategy: st.Metadata.Version, Hash: hash, Tags: task.Tags,
		SelfReplay: !w.cfg.Candidate && task.Strategy.Hash != "" && task.Strategy.Hash == hash}
	var key string
	if w.cfg.Cache != nil {
		key = w.cacheKey(task.ID, digest, st)
		if c, ok := w.cached(ctx, key); ok {
			return c, nil
		}
	}
	if w.cfg.live != nil && w.cfg.live.passed() {
		// Tasks start in order, so an earlier one's error (the one that
		// passed the cap) is the replay's; this one makes no live call.
		return res, fmt.Errorf("replay task %s: %w: not started", task.ID, ErrLiveCost)
	}
	j := newJournal(w.cfg.Source, task.Created)
	j.track, j.record = w.cfg.Cache != nil, w.cfg.Record
	providers := w.live
	if w.cfg.OnMiss != MissLive {
		providers = recordedOnly(providers)
	}
	clock := task.Created
	r := run.NewRunner(run.Config{Pipeline: w.prep.Pipeline, Navigator: w.prep.Navigator, Routine: w.prep.Routine,
		Strategy: st, Providers: providers, Journal: j, Prices: w.prep.Prices, Logger: w.cfg.Logger,
		// Tool calls are answered from their recordings; a replay never
		// starts a tool source unless on_miss = live meets a call of a
		// tool whose replay is live.
		Tools: w.prep.Tools, ToolReplay: w.cfg.OnMiss,
		Clock:  func() time.Time { return clock },
		Answer: j.answer, Compiled: w.compiledFor(st), OnSpans: w.cfg.OnSpans})
	rr, err := r.Start(ctx, run.Input{ID: task.ID, Input: input, Truth: task.Truth, Tags: task.Tags, Start: task.Start})
	if err != nil {
		return res, fmt.Errorf("replay task %s: %w", task.ID, err)
	}
	res.Status, res.Error, res.Misses, res.Output, res.Cited = rr.Status, rr.Error, j.misses, rr.Output, rr.Cited
	if j.misses > 0 && w.cfg.OnMiss == MissLive && w.cfg.live != nil {
		if total, over := w.cfg.live.add(liveCost(j.spans), w.cfg.MaxLiveCostUSD); over {
			return res, fmt.Errorf("replay task %s: %w: $%.4f spent, cap $%.4f (max_live_cost_usd)", task.ID, ErrLiveCost, total, w.cfg.MaxLiveCostUSD)
		}
	}
	if j.misses > 0 && w.cfg.OnMiss == MissSkip {
		res.Skipped = true
	}
	got := run.TraceOf(j.spans)
	res.ToolCalls, res.Live = run.ToolCallsOf(j.spans), LiveCalls(j.spans)
	res.LatencyMS = callLatency(j.spans)
	res.OutputDigest = OutputDigest(rr.Output)
	if res.SelfReplay {
		res.Divergence = diverge(recorded, got)
		res.Reproduced = res.Divergence == nil
	}
	o := sdk.TaskResult{Violations: rr.Violations, Confirmations: rr.Confirmations, Steps: rr.Steps, Tokens: rr.Tokens, CostUSD: rr.CostUSD}
	calls := j.hits + j.misses
	o.Confidence = 1
	if calls > 0 {
		o.Confidence = float64(j.hits) / float64(calls)
	}
	env := ScoreEnv(rr.Output, truth, input)
	switch {
	case rr.Status != store.StatusCompleted:
		o.Success = false
	case sc.success != nil:
		o.Success = sc.success.Of(env)
	case len(rewards) > 0:
		o.Success = mean(rewards) > 0
	default:
		o.Success = true
	}
	// Assertions: every one must pass; a named one is also a reward
	// dimension (1 pass, -1 fail).
	// A rubric or similar one gives its score (graded.go).
	for i, a := range sc.asserts {
		var ok, graded bool
		var value float64
		if scoring.Model(a.typ) {
			ok, value, graded = modelVerdict(rr, i)
		} else {
			ok = rr.Status == store.StatusCompleted && a.check(env)
			value, graded = -1, true
			if ok {
				value = 1
			}
		}
		o.Success = o.Success && ok
		if a.name != "" && graded {
			if o.Rewards == nil {
				o.Rewards = map[string]float64{}
			}
			o.Rewards[a.name] = value
		}
	}
	switch {
	case sc.reward != nil:
		if v, err := expr.Run(sc.reward, env); err == nil {
			o.Reward, _ = toFloat(v)
		}
	case len(rewards) > 0:
		o.Reward = mean(rewards)
	case o.Success:
		o.Reward = 1
	}
	// Named dimensions are the feedback given; a replay cannot change it.
	for name, d := range store.Dimensions(tree.Rewards) {
		if o.Rewards == nil {
			o.Rewards = map[string]float64{}
		}
		o.Rewards[name] = d.Mean()
	}
	res.Outcome = o
	// A skipped result is not cached (the next replay may have the
	// recording), nor one that reached a live provider (not reproducible).
	if w.cfg.Cache != nil && !res.Skipped && !(j.misses > 0 && w.cfg.OnMiss == MissLive) {
		b, err := json.Marshal(cacheEntry{Result: res, Reads: j.reads})
		if err == nil {
			err = w.cfg.Cache.Put(key, b)
		}
		if err != nil {
			// The cache is an optimisation: a result that cannot be kept is
			// still a result.
			w.cfg.Logger.Warn("replay result not cached", "task", task.ID, "err", err)
		}
	}
	return res, nil
}

// liveCost is what the provider calls among spans that were not answered
// from a recording cost.
func liveCost(spans []store.Span) float64 {
	usd := 0.0
	for _, sp := range spans {
		if rec, ok := sp.LookupAttr("sextant.recorded"); ok && !rec.Bool() {
			usd += sp.Attr("sextant.cost_usd").Float()
		}
	}
	return usd
}

// OutputDigest is the digest of an output (OutputDigest of a Result); ""
// for none.
func OutputDigest(out map[string]any) string {
	if out == nil {
		return ""
	}
	b, err := json.Marshal(out) // encoding/json sorts map keys
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// callLatency sums the latencies the spans of calls carry.
func callLatency(spans []store.Span) float64 {
	ms := 0.0
	for _, sp := range spans {
		if v, ok := sp.LookupAttr("sextant.latency_ms"); ok {
			ms += v.Float()
		}
	}
	return ms
}

// liveExecution is the task's latest live execution.
func liveExecution(tree *store.Tree) *store.ExecutionTree {
	for i := len(tree.Executions) - 1; i >= 0; i-- {
		if tree.Executions[i].Execution.Mode == "live" {
			return &tree.Executions[i]
		}
	}
	return nil
}

// recordedTrace is the live execution's trace: kept on the execution, or
// rebuilt from its spans.
func recordedTrace(tree *store.Tree) []string {
	live := liveExecution(tree)
	if live == nil {
		return nil
	}
	if live.Execution.Trace != nil {
		return live.Execution.Trace
	}
	return run.TraceOf(live.Spans)
}

// diverge returns the first difference between two traces, or nil.
func diverge(want, got []string) *Divergence {
	n := max(len(want), len(got))
	node := ""
	for i := 0; i < n; i++ {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if strings.HasPrefix(w, "step ") {
			node = strings.TrimPrefix(w, "step ")
		}
		if w != g {
			if w == "" {
				w = "(end of trace)"
			}
			if g == "" {
				g = "(end of trace)"
			}
			return &Divergence{Index: i, Node: node, Expected: w, Got: g}
		}
	}
	return nil
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}
