package sdk

import "time"

// EventSemantics reads the languages of a routine's event definitions
// (EventDef): the timer definitions ("timeDuration PT5M", "timeDate …",
// "timeCycle R3/PT10M", Zeebe's cron cycles) and the conditions of
// conditional events. The host waits for timers and evaluates conditions
// itself, between navigator calls, so it needs them read host-side.
//
// It is an optional interface of a builtin Navigator (one linked into
// sextant): the host asks the routine's navigator when it is a builtin
// that implements it; for a wasm or process navigator, the builtin
// registered under the same name when one implements it, else the one
// registered builtin that does (first by name). EventDef fixes the
// languages for every navigator, so any builtin that reads them reads
// them for all. It never crosses the wire.
type EventSemantics interface {
	// TimerDue is when a timer defined as def first fires, counted from
	// now. An error says why def is no timer definition.
	TimerDue(def string, now time.Time) (time.Time, error)
	// CycleNext is when a cycle timer that fell due at due and has fired
	// fires times fires next; ok is false when it fires no more (and for
	// a timer that is no cycle).
	CycleNext(def string, due time.Time, fires int) (next time.Time, ok bool)
	// Condition compiles a conditional event's condition once; the
	// returned function tells whether it holds over a run's variables
	// (env.Now is the run's clock). An error says why src does not parse.
	Condition(src string) (func(env Env) (bool, error), error)
}

// RulesChecker is an optional interface of a builtin Provider that takes
// a rules file (a pipeline's `rules = "…"`, sent as Config[ConfigRules]):
// the host checks the file with it when the pipeline is loaded, so that a
// mistake stops the run before a task exists. A provider without it sees
// its rules at its first call.
type RulesChecker interface {
	// CheckRules checks the rules text data of file; every problem is
	// reported, positioned in file (an *Error of CodeInvalid).
	CheckRules(file string, data []byte) error
}
