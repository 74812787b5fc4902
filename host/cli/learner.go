package cli

import (
	"context"
	"encoding/json"

	layer "github.com/sextant-dev/sextant/host/internal/app"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
)

// onlineLearner is the app layer's layer.Learner: the online adapter of
// online.go, which prints what it learned on stderr.
type onlineLearner struct{ a *app }

var _ layer.Learner = onlineLearner{}

// taskRun is the task learnResumed learns from: its store and pipeline.
type taskRun struct {
	s    *store.Store
	prep *run.Prepared
}

func (l onlineLearner) Head(ctx context.Context, s *store.Store, prep *run.Prepared) (*strategy.Strategy, error) {
	return l.a.onlineHead(ctx, s, prep)
}

func (l onlineLearner) TaskStrategy(ctx context.Context, s *store.Store, prep *run.Prepared, task string) {
	l.a.onlineTaskStrategy(ctx, s, prep, task)
}

func (l onlineLearner) Learn(ctx context.Context, s *store.Store, prep *run.Prepared, base *strategy.Strategy, res *run.Result, input map[string]any, truth json.RawMessage) error {
	return l.a.learnOnline(ctx, s, prep, base, res, input, truth)
}

func (l onlineLearner) Resumed(ctx context.Context, s *store.Store, prep *run.Prepared, res *run.Result) error {
	return l.a.learnResumed(ctx, &taskRun{s: s, prep: prep}, res)
}

func (l onlineLearner) Feedback(ctx context.Context, s *store.Store, path, task string, reward float64) error {
	return l.a.learnFromFeedback(ctx, s, path, task, reward)
}
