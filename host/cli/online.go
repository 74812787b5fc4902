package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/expr-lang/expr"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
)

// onlineHead switches prep to the version an online pipeline's next task
// runs under ([evolve] online): the newest version the online adapter
// recorded from the configured strategy. It returns the configured one.
func (a *app) onlineHead(ctx context.Context, s *store.Store, prep *run.Prepared) (*strategy.Strategy, error) {
	base := prep.Strategy
	p := prep.Pipeline
	head, err := evolve.Head(ctx, s, filepath.Dir(p.Path(p.Strategy.File)), p.Name, base)
	if err != nil {
		return nil, err
	}
	prep.Strategy = head
	return base, nil
}

// onlineTaskStrategy switches prep, about to continue task, to the strategy
// version the task started under when that is a version the online adapter
// recorded (the head has moved on since): a run never changes strategy
// half-way.
func (a *app) onlineTaskStrategy(ctx context.Context, s *store.Store, prep *run.Prepared, task string) {
	p := prep.Pipeline
	if !p.Evolve.Online {
		return
	}
	t, err := s.Task(ctx, task)
	if err != nil || t.Strategy.Hash == "" || t.Strategy.Hash == prep.Strategy.Hash() || t.Strategy.Name != prep.Strategy.Metadata.Name {
		return // the engine reports a missing task or another strategy
	}
	path := filepath.Join(filepath.Dir(p.Path(p.Strategy.File)), t.Strategy.Name+"-"+t.Strategy.Version+".toml")
	st, err := strategy.Load(path)
	if err != nil || st.Hash() != t.Strategy.Hash {
		return
	}
	prep.Strategy = st
}

// learnResumed is learnOnline for a run that completed in sextant resume.
func (a *app) learnResumed(ctx context.Context, tr *taskRun, res *run.Result) error {
	p := tr.prep.Pipeline
	if !p.Evolve.Online || res.Status != store.StatusCompleted {
		return nil
	}
	base, err := strategy.Load(p.Path(p.Strategy.File))
	if err != nil {
		return err
	}
	t, err := tr.s.Task(ctx, res.Task)
	if err != nil {
		return err
	}
	var input map[string]any
	if len(t.Input) > 0 {
		if err := json.Unmarshal(t.Input, &input); err != nil {
			return fmt.Errorf("online: task %s: input: %w", t.ID, err)
		}
	}
	return a.learnOnline(ctx, tr.s, tr.prep, base, res, input, t.Truth)
}

// learnOnline is the online adapter's step after a run that completed with
// a verdict ([score] success): the bullets the run cited are tagged with
// its outcome, its curator's delta ([evolve] delta) is applied, and the
// result is recorded as the next version, which the next run uses.
func (a *app) learnOnline(ctx context.Context, s *store.Store, prep *run.Prepared, base *strategy.Strategy, res *run.Result, input map[string]any, truth json.RawMessage) error {
	p := prep.Pipeline
	if res.Status != store.StatusCompleted || p.Score.Success == "" {
		return nil // no verdict: nothing to learn from yet
	}
	var tv any
	if len(truth) > 0 {
		if err := json.Unmarshal(truth, &tv); err != nil {
			return fmt.Errorf("online: truth: %w", err)
		}
	}
	prog, err := expr.Compile(p.Score.Success, expr.AsBool())
	if err != nil {
		return fmt.Errorf("online: score.success: %w", err)
	}
	v, err := expr.Run(prog, map[string]any{"output": res.Output, "truth": tv, "input": input, "vars": res.Output})
	success := err == nil && v == true
	tag := strategy.TagHarmful
	if success {
		tag = strategy.TagHelpful
	}
	lesson := evolve.Lesson{Use: evolve.Use{Task: res.Task, Cited: res.Cited, Tag: tag}, Delta: res.Output[p.Evolve.Delta]}
	at, err := a.clock()
	if err != nil {
		return err
	}
	now := at.Now().UTC().Truncate(time.Second)
	// The head, not necessarily the version the run used: a resumed run
	// may have started under an older one, and lineage stays one line.
	head, err := evolve.Head(ctx, s, filepath.Dir(p.Path(p.Strategy.File)), p.Name, base)
	if err != nil {
		return err
	}
	learned, err := evolve.Learn(head, lesson, strategy.Hygiene{PruneHarmful: p.Evolve.PruneHarmful, DedupThreshold: p.Evolve.DedupThreshold}, now)
	if err != nil {
		return err
	}
	return a.recordLearned(ctx, s, p, base, learned, lesson, now, map[bool]string{true: "succeeded", false: "failed"}[success])
}

// recordLearned records an online step's new version and says so.
func (a *app) recordLearned(ctx context.Context, s *store.Store, p *pipeline.Pipeline, base *strategy.Strategy, learned *evolve.Learned, lesson evolve.Lesson, now time.Time, outcome string) error {
	if learned.Rejected != nil {
		fmt.Fprintf(a.stderr, "online: the curator's delta was not applied: %v\n", learned.Rejected)
	}
	if learned.Strategy == nil {
		return nil
	}
	path, err := evolve.Record(ctx, s, filepath.Dir(p.Path(p.Strategy.File)), p.Name, base, learned, lesson, now)
	if err != nil {
		return err
	}
	ops := learned.Strategy.ChangeLog[len(learned.Strategy.ChangeLog)-1].Playbook
	count := map[strategy.Op]int{}
	for _, d := range ops {
		count[d.Op]++
	}
	var parts []string
	for _, op := range []strategy.Op{strategy.OpTag, strategy.OpAdd, strategy.OpUpdate, strategy.OpRemove} {
		if count[op] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", count[op], op))
		}
	}
	fmt.Fprintf(a.stderr, "learned %s %s from task %s (%s; %s) → %s\n", learned.Strategy.Metadata.Name, learned.Strategy.Metadata.Version,
		lesson.Use.Task, outcome, strings.Join(parts, ", "), path)
	return nil
}

// learnFromFeedback is the online adapter's step when feedback arrives for
// a finished task of an online pipeline (sextant feedback --pipeline): the
// bullets the task's run cited are tagged by the reward's sign, and, for a
// pipeline without [score] success (whose runs could not learn when they
// ended), the run's curator delta is applied too. Nothing is learned for
// a pipeline that is not online.
func (a *app) learnFromFeedback(ctx context.Context, s *store.Store, path, task string, reward float64) error {
	p, err := pipeline.Load(ctx, path, nil, pipeline.Options{})
	if err != nil {
		return err
	}
	if !p.Evolve.Online {
		return nil
	}
	base, err := strategy.Load(p.Path(p.Strategy.File))
	if err != nil {
		return err
	}
	if base.Evolution.BranchType != strategy.Experimental {
		return withInvalid(fmt.Errorf("%s: evolve.online: strategy %s %s is on the %s branch: only experimental strategies learn online", p.File, base.Metadata.Name, base.Metadata.Version, base.Evolution.BranchType))
	}
	dir := filepath.Dir(p.Path(p.Strategy.File))
	head, err := evolve.Head(ctx, s, dir, p.Name, base)
	if err != nil {
		return err
	}
	tree, err := s.Tree(ctx, task)
	if err != nil {
		return err
	}
	var fin *run.Finished
	for i := len(tree.Executions) - 1; i >= 0; i-- {
		ex := tree.Executions[i]
		if ex.Execution.Mode != "live" || ex.Execution.Status != store.StatusCompleted || ex.Checkpoint == nil {
			continue
		}
		if fin, err = run.FinishedOf(ex.Checkpoint); err != nil {
			return err
		}
		break
	}
	if fin == nil {
		fmt.Fprintf(a.stderr, "online: task %s has no completed run to learn from\n", task)
		return nil
	}
	lesson := evolve.Lesson{Use: evolve.Use{Task: task, Cited: fin.Cited, Tag: evolve.TagOfReward(reward)}}
	if p.Score.Success == "" {
		lesson.Delta = fin.Output[p.Evolve.Delta]
	}
	clk, err := a.clock()
	if err != nil {
		return err
	}
	now := clk.Now().UTC().Truncate(time.Second)
	learned, err := evolve.Learn(head, lesson, strategy.Hygiene{PruneHarmful: p.Evolve.PruneHarmful, DedupThreshold: p.Evolve.DedupThreshold}, now)
	if err != nil {
		return err
	}
	return a.recordLearned(ctx, s, p, base, learned, lesson, now, fmt.Sprintf("reward %+g", reward))
}
