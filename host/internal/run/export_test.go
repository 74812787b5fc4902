package run

// CopyVars makes r's runs copy vars at every step output, as they did
// before assignOutput wrote into a map of its own (the reference path of
// TestVarsInPlace).
func CopyVars(r *Runner) { r.copyVars = true }
