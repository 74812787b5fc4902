package run

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sextant-dev/sextant/sdk"
)

// CheckInput asks the navigator whether a run can start on in (a chain
// names the inputs it needs), writing nothing: a command calls it before
// it opens, or creates, a store. An input the routine refuses is an error
// matching sdk.ErrInvalid; any other failure is left to the run itself,
// which records it.
//
// A navigator keeps no run state, so asking it to start and dropping its
// answer changes nothing.
func (p *Prepared) CheckInput(ctx context.Context, in Input) error {
	var strat map[string]any
	if p.Strategy != nil {
		strat = p.Strategy.Env()
	}
	st := sdk.State{Routine: p.Routine.Hash, Env: sdk.Env{Input: orEmpty(in.Input), Vars: map[string]any{}, Strategy: strat, Now: time.Now()}}
	if _, err := p.Navigator.Start(ctx, &sdk.StartRequest{State: st, Trigger: in.Start}); err != nil && errors.Is(err, sdk.ErrInvalid) {
		return fmt.Errorf("start: %w", err)
	}
	return nil
}
