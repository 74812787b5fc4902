package bpmn

import (
	"time"

	"github.com/sextant-dev/sextant/navigators/feel"
	"github.com/sextant-dev/sextant/sdk"
)

// The host waits for timers and evaluates conditional events between
// navigator calls; the navigator, which owns the languages of its event
// definitions, reads them for it (sdk.EventSemantics), so that the run
// engine links no timer or expression language of its own.
var _ sdk.EventSemantics = (*Navigator)(nil)

// TimerDue implements sdk.EventSemantics (see the package's TimerDue).
func (nv *Navigator) TimerDue(def string, now time.Time) (time.Time, error) {
	return TimerDue(def, now)
}

// CycleNext implements sdk.EventSemantics (see the package's CycleNext).
func (nv *Navigator) CycleNext(def string, due time.Time, fires int) (time.Time, bool) {
	return CycleNext(def, due, fires)
}

// Condition implements sdk.EventSemantics: src is FEEL (without Zeebe's
// "=" prefix). It sees the run's variables as a BPMN condition does: by
// name (start input first, variables over it, as Zeebe's process
// variables) and under input, vars and strategy. It holds only when it
// gives true; null or any other value does not hold.
func (nv *Navigator) Condition(src string) (func(env sdk.Env) (bool, error), error) {
	x, err := feel.Parse(src)
	if err != nil {
		return nil, err
	}
	return func(env sdk.Env) (bool, error) {
		scope := make(map[string]any, len(env.Input)+len(env.Vars)+3)
		for k, v := range env.Input {
			scope[k] = v
		}
		for k, v := range env.Vars {
			scope[k] = v
		}
		scope["input"], scope["vars"], scope["strategy"] = orEmpty(env.Input), orEmpty(env.Vars), orEmpty(env.Strategy)
		v, err := x.EvalAt(scope, env.Now)
		if err != nil {
			return false, err
		}
		return v == true, nil
	}, nil
}
