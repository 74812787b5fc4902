package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/expr-lang/expr"

	"github.com/sextant-dev/sextant/host/evolve"
	"github.com/sextant-dev/sextant/host/run"
	"github.com/sextant-dev/sextant/host/store"
	"github.com/sextant-dev/sextant/host/strategy"
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
	learned, err := evolve.Learn(prep.Strategy, lesson, strategy.Hygiene{PruneHarmful: p.Evolve.PruneHarmful, DedupThreshold: p.Evolve.DedupThreshold}, now)
	if err != nil {
		return err
	}
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
		res.Task, map[bool]string{true: "succeeded", false: "failed"}[success], strings.Join(parts, ", "), path)
	return nil
}
