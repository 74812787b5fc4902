package run

import (
	"sync"
	"sync/atomic"
)

// CopyVars makes r's runs copy vars at every step output, as they did
// before assignOutput wrote into a map of its own (the reference path of
// TestVarsInPlace).
func CopyVars(r *Runner) { r.copyVars = true }

// DerivedRunner returns the runner a stepwise call of s runs on (derived
// from s's base) and the one NewRunner makes of the same configuration,
// both with the configuration itself cleared (it holds funcs, which never
// compare equal).
func DerivedRunner(s *Stepper) (derived, made *Runner) {
	d, n := s.baseRunner().derive(s.cfg), NewRunner(s.cfg)
	d.cfg, n.cfg = Config{}, Config{}
	return d, n
}

// CountPoolMaps counts the maps the pools of runs Start makes make from
// now on (made: text outputs, Done maps, chat Vars), until restore; no
// run may be going on at either call.
func CountPoolMaps() (made func() [3]int64, restore func()) {
	var n [3]atomic.Int64
	pools := []*sync.Pool{&textOutputs, &doneMaps, &chatVarMaps}
	olds := make([]func() any, len(pools))
	for i, p := range pools {
		olds[i] = p.New
		p.New = func() any { n[i].Add(1); return olds[i]() }
	}
	return func() [3]int64 { return [3]int64{n[0].Load(), n[1].Load(), n[2].Load()} }, func() {
		for i, p := range pools {
			p.New = olds[i]
		}
	}
}
