// Package evolve improves strategies from recorded evidence (DESIGN §7):
// it proposes candidates (mutators), measures them against the baseline
// (paired statistics over the same replayed tasks), judges them (the
// built-in gates and the gate chain, with the one function that turns a
// ruling into an exit code), and settles a round (promotion with lineage,
// the review queue, archiving the losers).
//
// Measuring and judging are pure functions of their inputs: no clock, no
// store, no network, no global randomness. The same tasks, strategies,
// options and seed give the same comparison, the same verdicts and the
// same exit code, bit for bit, which is what lets CI fail a build on a
// regression and lets a stored comparison be judged again later. Mutators
// are deterministic given their probe results, seed and the time they are
// told (never the clock); Curate talks to a provider; Settle, Promote and
// the review queue write to the store and the strategy directory.
//
// The package does not replay tasks: callers hand mutators a Probe that
// does (the CLI replays through host/replay).
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
