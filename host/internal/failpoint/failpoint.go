// Package failpoint stops the process dead at a named point of the code, so
// crash-safety tests can interrupt a run at an exact place instead of
// killing it after a guessed delay.
//
// It is for tests only. A failpoint is armed by the environment variable
// SEXTANT_FAILPOINT, read once when the process starts:
//
//	SEXTANT_FAILPOINT=run.step.done:3          # SIGKILL at the 3rd pass through run.step.done
//	SEXTANT_FAILPOINT=store.checkpoint.commit:2,run.chat.answered:1
//
// Each entry is NAME:N with N ≥ 1; the process kills itself (SIGKILL, no
// deferred functions, no flush) at the N-th pass through NAME, counting
// from process start. When the variable is unset, [Hit] is one load and a
// compare: it costs nothing a run could measure. No production setting
// reads this package; never set the variable outside a test.
//
// The package must not depend on anything in sextant: the store and the
// run engine both call it.
package failpoint

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Env is the environment variable that arms failpoints (tests only).
const Env = "SEXTANT_FAILPOINT"

// The points the code passes through, in the order a step meets them.
const (
	// StepStart: a step is about to run (nothing of it is durable).
	StepStart = "run.step.start"
	// ToolStarted: a tool call's started marker is recorded; the tool
	// is not yet called.
	ToolStarted = "run.tool.started"
	// ToolRecorded: a tool call's result is recorded; the step goes on.
	ToolRecorded = "run.tool.recorded"
	// StepDone: a step has run; its result is not yet checkpointed.
	StepDone = "run.step.done"
	// ChatAnswered: a provider answered; the answer is not yet recorded.
	ChatAnswered = "run.chat.answered"
	// ChatRecorded: a provider's answer is recorded; the step goes on.
	ChatRecorded = "run.chat.recorded"
	// EventFired: a timer, message or signal was delivered to the
	// navigator; the new state is not yet checkpointed.
	EventFired = "run.event.fired"
	// WaitSleep: a run is checkpointed waiting and `run --wait` is about
	// to sleep until its next timer.
	WaitSleep = "run.wait.sleep"
	// StatusExecution: the execution's final status is written, the
	// task's is not yet.
	StatusExecution = "run.status.execution"
	// CheckpointCommit: inside the checkpoint's transaction, every key set,
	// before the commit.
	CheckpointCommit = "store.checkpoint.commit"
	// CheckpointCommitted: the checkpoint's transaction is committed, not
	// yet synced to disk.
	CheckpointCommitted = "store.checkpoint.committed"
	// CheckpointSynced: the checkpoint is committed and synced; the
	// caller has not yet seen it return.
	CheckpointSynced = "store.checkpoint.synced"
	// EvolveEpoch: an offline evolution is about to start an epoch; the
	// epochs before it are checkpointed.
	EvolveEpoch = "evolve.epoch.start"
	// StoreMigrate: the store is building its indexes from its records (a
	// store of an older layout, or an interrupted import); a batch of
	// tasks is summarized, the layout not yet recorded.
	StoreMigrate = "store.migrate.batch"
	// PluginPinWritten: plugins pin wrote and synced the pinned manifest
	// beside plugin.toml; plugin.toml is not yet replaced by it.
	PluginPinWritten = "plugin.pin.written"
)

var (
	armed  map[string]int // name → pass to kill at; nil when unset
	badEnv error          // a malformed SEXTANT_FAILPOINT
	mu     sync.Mutex
	passes = map[string]int{}
)

func init() {
	armed, badEnv = parse(os.Getenv(Env))
}

// parse reads a SEXTANT_FAILPOINT value.
func parse(v string) (map[string]int, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	m := map[string]int{}
	for _, f := range strings.Split(v, ",") {
		name, n, ok := strings.Cut(strings.TrimSpace(f), ":")
		k, err := strconv.Atoi(n)
		if !ok || name == "" || err != nil || k < 1 {
			return nil, fmt.Errorf("%s: entry %q: want NAME:N with N ≥ 1", Env, f)
		}
		m[name] = k
	}
	return m, nil
}

// Hit marks one pass through the named point and, when SEXTANT_FAILPOINT
// arms this pass, kills the process with SIGKILL. It never returns then.
func Hit(name string) {
	if armed == nil && badEnv == nil {
		return
	}
	hit(name)
}

func hit(name string) {
	if badEnv != nil {
		// A test that sets a malformed value must not pass by accident.
		fmt.Fprintln(os.Stderr, "sextant:", badEnv)
		os.Exit(2)
	}
	want, ok := armed[name]
	if !ok {
		return
	}
	mu.Lock()
	passes[name]++
	n := passes[name]
	mu.Unlock()
	if n != want {
		return
	}
	fmt.Fprintf(os.Stderr, "sextant: failpoint %s:%d: killing the process\n", name, n)
	kill()
}

// kill ends the process the way a crash or `kill -9` does.
func kill() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		p.Kill() // SIGKILL on unix, TerminateProcess on windows
	}
	for { // the signal is on its way; never go on
		time.Sleep(time.Hour)
	}
}
