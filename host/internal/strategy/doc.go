// Package strategy is sextant's model of a strategy file (DESIGN §5): a
// versioned TOML document of parameters, constraints, evolution limits, an
// ACE-style playbook and a change log.
//
// It loads and validates strategy files (every problem at once, each as
// `file:line: key.path: message`), computes their content hash, diffs two
// versions into the shape gates read (sdk.StrategyDiff), derives a new
// version (semver minor bump, parameter changes, playbook delta operations,
// a change_log entry) and writes it as a new file. It also answers the action
// policy question of DESIGN §4.1 (execute, confirm or blocked) and exports
// the strategy as generic values for templates and expressions.
//
// The package decides nothing about evolution: it never judges whether a
// candidate is better, never enforces gate limits such as
// max_parameter_delta or cooldown (gates do, from the diff), never touches
// the store, and never overwrites a file (a promoted strategy is immutable).
//
// # Canonical form and hash
//
// The canonical encoding of a strategy is the TOML that [Strategy.Encode]
// writes, and its content hash is the sha256 of those bytes. So the hash
// does not depend on key order, whitespace, comments, number spelling
// (0.6 = 0.60 = 6e-1; an integer parameter 1 = 1.0), string quoting, time
// zone offsets (times are written in UTC) or the order of the action lists
// in [constraints] (they are sets, written sorted). It does depend on
// everything that is content, including metadata, the order of playbook
// bullets (the order they are shown to the model) and the change log.
// A file that sextant wrote hashes to its own sha256sum.
package strategy
