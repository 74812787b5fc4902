package run

import (
	"errors"
	"time"

	"github.com/sextant-dev/sextant/sdk"
)

// errNoEventSemantics is a timer's error when no linked navigator reads
// timer definitions (a host built without the builtin navigators).
var errNoEventSemantics = errors.New("no builtin navigator reads timer definitions (sdk.EventSemantics)")

// eventSemantics finds what reads the routine's timer definitions and
// conditions (sdk.EventSemantics documents the rule): nav itself when it
// is a builtin that implements it, else the builtin registered as name
// (the routine's navigator, overridden by an installed plugin), else the
// first registered builtin, by name, that implements it. Nil when none
// does. The run engine imports no navigator: it finds them here.
func eventSemantics(nav sdk.Navigator, name string) sdk.EventSemantics {
	if s, ok := nav.(sdk.EventSemantics); ok {
		return s
	}
	var first sdk.EventSemantics
	for _, p := range sdk.Registered() {
		s, ok := p.(sdk.EventSemantics)
		if !ok {
			continue
		}
		if p.Describe().Name == name {
			return s
		}
		if first == nil {
			first = s
		}
	}
	return first
}

// needsEvents reports whether routine r has a timer or conditional event,
// the events whose definitions the host reads.
func needsEvents(r *sdk.Routine) bool {
	if r == nil {
		return false
	}
	for _, n := range r.Nodes {
		if d := n.Event; d != nil && (d.Type == sdk.EventTimer || d.Type == sdk.EventConditional) {
			return true
		}
	}
	return false
}

// timerDue is when a timer defined as def ("timeDuration PT5M",
// "timeDate 2026-…", "timeCycle R3/PT10M", "timeCycle 0 0 9 * * MON")
// first fires, counted from now, as the routine's navigator reads it.
func (r *Runner) timerDue(def string, now time.Time) (time.Time, error) {
	if r.events == nil {
		return time.Time{}, errNoEventSemantics
	}
	return r.events.TimerDue(def, now)
}

// cycleNext is when a cycle timer that fell due at due and has fired
// fires times fires next; ok is false when it fires no more.
func (r *Runner) cycleNext(def string, due time.Time, fires int) (time.Time, bool) {
	if r.events == nil {
		return time.Time{}, false
	}
	return r.events.CycleNext(def, due, fires)
}
