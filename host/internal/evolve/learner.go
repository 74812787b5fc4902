package evolve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/sextant-dev/sextant/host/internal/clock"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

// Online is the online adapter ([evolve] online) around the runs of an
// online pipeline: a run starts under the newest version it recorded
// (Head), a run that ends with a verdict teaches the next one (Learn,
// Resumed), and so does feedback on a finished task (Feedback). Each
// lesson is recorded as a new version with Record.
type Online struct {
	// Clock dates the versions recorded; nil is the wall clock.
	Clock clock.Clock
	// Out is told what was learned, one line a version (the CLI's
	// stderr); nil: nobody.
	Out io.Writer
}

// Head switches prep to the version an online pipeline's next task runs
// under: the newest version the adapter recorded from the configured
// strategy. It returns the configured one.
func (o *Online) Head(ctx context.Context, s *store.Store, prep *run.Prepared) (*strategy.Strategy, error) {
	base := prep.Strategy
	head, err := Head(ctx, s, strategyDir(prep.Pipeline), prep.Pipeline.Name, base)
	if err != nil {
		return nil, err
	}
	prep.Strategy = head
	return base, nil
}

// TaskStrategy switches prep, about to continue task, to the version the
// task started under when that is a version the adapter recorded (the
// head has moved on since): a run never changes strategy half-way. A
// missing task or another strategy is left for the engine to report.
func (o *Online) TaskStrategy(ctx context.Context, s *store.Store, prep *run.Prepared, task string) {
	p := prep.Pipeline
	if !p.Evolve.Online {
		return
	}
	t, err := s.Task(ctx, task)
	if err != nil || t.Strategy.Hash == "" || t.Strategy.Hash == prep.Strategy.Hash() || t.Strategy.Name != prep.Strategy.Metadata.Name {
		return
	}
	st, err := strategy.Load(filepath.Join(strategyDir(p), t.Strategy.Name+"-"+t.Strategy.Version+".toml"))
	if err != nil || st.Hash() != t.Strategy.Hash {
		return
	}
	prep.Strategy = st
}

// Learn is the adapter's step after a run that completed with a verdict
// ([score] success, compiled as a replay compiles it): the bullets the run
// cited are tagged with its outcome, its curator's delta ([evolve] delta)
// is applied, and the result is recorded as the next version, which the
// next run uses. base is the configured strategy.
func (o *Online) Learn(ctx context.Context, s *store.Store, prep *run.Prepared, base *strategy.Strategy, res *run.Result, input map[string]any, truth json.RawMessage) error {
	p := prep.Pipeline
	if res.Status != store.StatusCompleted {
		return nil
	}
	success, err := replay.CompileSuccess(p.Score.Success)
	if err != nil {
		return fmt.Errorf("online: %w", err)
	}
	if success == nil {
		return nil // no verdict: nothing to learn from yet
	}
	var tv any
	if len(truth) > 0 {
		if err := json.Unmarshal(truth, &tv); err != nil {
			return fmt.Errorf("online: truth: %w", err)
		}
	}
	ok := success.Of(replay.ScoreEnv(res.Output, tv, input))
	tag, outcome := strategy.TagHarmful, "failed"
	if ok {
		tag, outcome = strategy.TagHelpful, "succeeded"
	}
	lesson := Lesson{Use: Use{Task: res.Task, Cited: res.Cited, Tag: tag}, Delta: res.Output[p.Evolve.Delta]}
	return o.learn(ctx, s, p, base, lesson, outcome)
}

// Resumed is Learn for a run that ended in a resume: the configured
// strategy, the task's input and its truth are read back.
func (o *Online) Resumed(ctx context.Context, s *store.Store, prep *run.Prepared, res *run.Result) error {
	p := prep.Pipeline
	if !p.Evolve.Online || res.Status != store.StatusCompleted {
		return nil
	}
	base, err := strategy.Load(p.Path(p.Strategy.File))
	if err != nil {
		return err
	}
	t, err := s.Task(ctx, res.Task)
	if err != nil {
		return err
	}
	var input map[string]any
	if len(t.Input) > 0 {
		if err := json.Unmarshal(t.Input, &input); err != nil {
			return fmt.Errorf("online: task %s: input: %w", t.ID, err)
		}
	}
	return o.Learn(ctx, s, prep, base, res, input, t.Truth)
}

// Feedback is the adapter's step when a reward arrives for a finished task
// of the pipeline file path: the bullets the task's last completed run
// cited are tagged by the reward's sign, and, for a pipeline without
// [score] success (whose runs could not learn when they ended), the run's
// curator delta is applied too. A pipeline that is not online learns
// nothing.
func (o *Online) Feedback(ctx context.Context, s *store.Store, path, task string, reward float64) error {
	p, err := pipeline.Load(ctx, path, nil, pipeline.Options{})
	if err != nil || !p.Evolve.Online {
		return err
	}
	base, err := strategy.Load(p.Path(p.Strategy.File))
	if err != nil {
		return err
	}
	if base.Evolution.BranchType != strategy.Experimental {
		return sdk.Invalid(sdk.Problem{File: p.File, Element: "evolve.online",
			Message: fmt.Sprintf("strategy %s %s is on the %s branch: only experimental strategies learn online", base.Metadata.Name, base.Metadata.Version, base.Evolution.BranchType)})
	}
	fin, err := lastFinished(ctx, s, task)
	if err != nil {
		return err
	}
	if fin == nil {
		o.say("online: task %s has no completed run to learn from\n", task)
		return nil
	}
	lesson := Lesson{Use: Use{Task: task, Cited: fin.Cited, Tag: TagOfReward(reward)}}
	if p.Score.Success == "" {
		lesson.Delta = fin.Output[p.Evolve.Delta]
	}
	return o.learn(ctx, s, p, base, lesson, fmt.Sprintf("reward %+g", reward))
}

// lastFinished is the end of task's last completed live run, nil when it
// has none.
func lastFinished(ctx context.Context, s *store.Store, task string) (*run.Finished, error) {
	tree, err := s.Tree(ctx, task)
	if err != nil {
		return nil, err
	}
	for i := len(tree.Executions) - 1; i >= 0; i-- {
		ex := tree.Executions[i]
		if ex.Execution.Mode == "live" && ex.Execution.Status == store.StatusCompleted && ex.Checkpoint != nil {
			return run.FinishedOf(ex.Checkpoint)
		}
	}
	return nil, nil
}

// learn applies lesson to the head of p's configured strategy base (the
// head, not necessarily the version the run used: a resumed run may have
// started under an older one, and lineage stays one line), records the
// next version and says so.
func (o *Online) learn(ctx context.Context, s *store.Store, p *pipeline.Pipeline, base *strategy.Strategy, lesson Lesson, outcome string) error {
	clk := o.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	now := clk.Now().UTC().Truncate(time.Second)
	dir := strategyDir(p)
	head, err := Head(ctx, s, dir, p.Name, base)
	if err != nil {
		return err
	}
	learned, err := Learn(head, lesson, strategy.Hygiene{PruneHarmful: p.Evolve.PruneHarmful, DedupThreshold: p.Evolve.DedupThreshold}, now)
	if err != nil {
		return err
	}
	if learned.Rejected != nil {
		o.say("online: the curator's delta was not applied: %v\n", learned.Rejected)
	}
	if learned.Strategy == nil {
		return nil
	}
	path, err := Record(ctx, s, dir, p.Name, base, learned, lesson, now)
	if err != nil {
		return err
	}
	o.say("learned %s %s from task %s (%s; %s) → %s\n", learned.Strategy.Metadata.Name, learned.Strategy.Metadata.Version,
		lesson.Use.Task, outcome, OpCounts(learned.Strategy.ChangeLog[len(learned.Strategy.ChangeLog)-1].Playbook), path)
	return nil
}

func (o *Online) say(format string, args ...any) {
	if o.Out != nil {
		fmt.Fprintf(report.TermSafe(o.Out), format, args...)
	}
}

// OpCounts says how many playbook operations of each kind ops holds, as
// "2 tag, 1 add" (tag, add, update, remove; "" for none).
func OpCounts(ops []strategy.Delta) string {
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
	return strings.Join(parts, ", ")
}

// strategyDir is where p's strategy versions live: beside its strategy
// file.
func strategyDir(p *pipeline.Pipeline) string {
	return filepath.Dir(p.Path(p.Strategy.File))
}
