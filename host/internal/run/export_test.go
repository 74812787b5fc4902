package run

import "sync/atomic"

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

// CountTextOutputs counts the maps textOutputs makes from now on
// (made), until restore; no run may be going on at either call.
func CountTextOutputs() (made func() int64, restore func()) {
	var n atomic.Int64
	old := textOutputs.New
	textOutputs.New = func() any { n.Add(1); return old() }
	return n.Load, func() { textOutputs.New = old }
}
