package cli

import (
	"context"
	"encoding/json"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
)

// online is the online adapter ([evolve] online) of this command: it says
// what it learned on stderr and dates versions by the command's clock.
func (a *app) online() (*evolve.Online, error) {
	clk, err := a.clock()
	if err != nil {
		return nil, err
	}
	return &evolve.Online{Clock: clk, Out: a.stderr}, nil
}

// onlineHead is evolve.Online.Head.
func (a *app) onlineHead(ctx context.Context, s *store.Store, prep *run.Prepared) (*strategy.Strategy, error) {
	return (&evolve.Online{}).Head(ctx, s, prep)
}

// onlineTaskStrategy is evolve.Online.TaskStrategy.
func (a *app) onlineTaskStrategy(ctx context.Context, s *store.Store, prep *run.Prepared, task string) {
	(&evolve.Online{}).TaskStrategy(ctx, s, prep, task)
}

// learnResumed is evolve.Online.Resumed.
func (a *app) learnResumed(ctx context.Context, tr *taskRun, res *run.Result) error {
	o, err := a.online()
	if err != nil {
		return err
	}
	return o.Resumed(ctx, tr.s, tr.prep, res)
}

// learnOnline is evolve.Online.Learn.
func (a *app) learnOnline(ctx context.Context, s *store.Store, prep *run.Prepared, base *strategy.Strategy, res *run.Result, input map[string]any, truth json.RawMessage) error {
	o, err := a.online()
	if err != nil {
		return err
	}
	return o.Learn(ctx, s, prep, base, res, input, truth)
}

// learnFromFeedback is evolve.Online.Feedback.
func (a *app) learnFromFeedback(ctx context.Context, s *store.Store, path, task string, reward float64) error {
	o, err := a.online()
	if err != nil {
		return err
	}
	return o.Feedback(ctx, s, path, task, reward)
}
