// Package evolve decides whether a candidate strategy may replace its
// baseline (DESIGN §7): paired statistics over the same replayed tasks
// under both strategies, the comparison gates read, the built-in gates,
// and the gate chain with the one function that turns its ruling into an
// exit code.
//
// Everything here is a pure function of its inputs: no clock, no store, no
// network, no global randomness. The same tasks, strategies, options and
// seed give the same comparison, the same verdicts and the same exit code,
// bit for bit, which is what lets CI fail a build on a regression and
// lets a stored comparison be judged again later.
//
// The package does not replay tasks (host/replay does), does not propose
// candidates and does not promote them; it only measures and judges.
//
// # Statistics
//
// Every metric is compared paired: task i under the baseline against task
// i under the candidate. Pass/fail metrics (success_rate,
// violation_free_rate) get McNemar's exact test on the discordant pairs
// and a paired bootstrap percentile interval of the difference in
// proportions; continuous metrics (reward, violations, confirmations,
// steps, tokens, cost_usd) a paired bootstrap of the mean difference with
// a bootstrap p-value. Effect is always candidate − baseline. See
// [McNemar], [PairedBinary] and [PairedContinuous] for the exact methods,
// and RATIONALE.md beside this file for why.
//
// # Gates
//
// [Builtin] makes the built-in gates of pipeline.BuiltinGates; their
// config keys and defaults are read from that declaration. [Evaluate] runs
// every gate of a chain — built-in or plugin — and [ExitCode] maps the
// chain's ruling to the process exit code.
package evolve
