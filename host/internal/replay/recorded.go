package replay

import (
	"errors"
	"fmt"
	"sort"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

// ErrChanged marks a replay refused because a file its tasks were recorded
// with changed while the strategy version stayed the same: every
// self-replay would then fail to reproduce, or none would count, for a
// reason no divergence shows. errors.Is(err, sdk.ErrInvalid) holds too.
var ErrChanged = errors.New("changed since its tasks were recorded")

// ChangedError names the file that changed under an unchanged strategy
// version, and one recorded task that shows it.
type ChangedError struct {
	// What is "strategy", "routine" or "rules".
	What string
	// Strategy is the strategy's name and version ("email-handler 2.0.0").
	Strategy string
	// File is the routine's or rules file's path (empty for a strategy);
	// Provider the provider block whose rules changed.
	File, Provider string
	// Was is the hash the tasks recorded, Now the hash of what is loaded.
	Was, Now string
	// Task is the first recorded task (by id) with Was; Tasks how many.
	Task  string
	Tasks int
}

func (e *ChangedError) Error() string {
	recorded := fmt.Sprintf("(hash %s → %s; %s, task %s)", short(e.Was), short(e.Now), plural(e.Tasks, "1 task", "%d tasks"), e.Task)
	switch e.What {
	case "routine":
		return fmt.Sprintf("routine %s changed since the tasks of %s were recorded %s: bump the strategy's version, or record the tasks again",
			e.File, e.Strategy, recorded)
	case "rules":
		return fmt.Sprintf("rules %s (providers.%s) changed since the tasks of %s were recorded %s: on_miss = live would answer from the new rules; bump the strategy's version, or record the tasks again",
			e.File, e.Provider, e.Strategy, recorded)
	}
	return fmt.Sprintf("%s changed since its tasks were recorded %s: bump its version", e.Strategy, recorded)
}

// Is makes errors.Is match ErrChanged and sdk.ErrInvalid (exit 2: the
// input is inconsistent, nothing was replayed).
func (e *ChangedError) Is(target error) bool { return target == ErrChanged || target == sdk.ErrInvalid }

func short(h string) string {
	if len(h) > 12 {
		return h[:12] + "…"
	}
	return h
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return fmt.Sprintf(many, n)
}

// recordedCheck compares what each recorded task ran with against what the
// replay loaded: a strategy of the same name and version must have the same
// content hash; under the same strategy, the routine (and, when on_miss =
// live lets a replay read them, the rules files) must be the ones recorded.
// Tasks recorded before routine and rules hashes were kept are checked for
// the strategy only.
type recordedCheck struct {
	strategies []*strategy.Strategy
	hashes     []string
	routine    string
	file       string // the routine's path
	rules      map[string]string
	rulesFiles map[string]string // provider block → rules path
	found      map[string]*ChangedError
}

func newRecordedCheck(cfg Config, prep *run.Prepared) *recordedCheck {
	c := &recordedCheck{strategies: cfg.Strategies, found: map[string]*ChangedError{}}
	for _, st := range cfg.Strategies {
		c.hashes = append(c.hashes, st.Hash())
	}
	if prep.Routine != nil {
		c.routine = prep.Routine.Hash
	}
	if p := prep.Pipeline; p != nil {
		c.file = p.Routine.File
		if cfg.OnMiss == MissLive {
			c.rules = prep.Providers.RulesHashes()
			c.rulesFiles = map[string]string{}
			for name, pr := range p.Providers {
				c.rulesFiles[name] = pr.Rules
			}
		}
	}
	return c
}

// task checks one recorded task; a nil check (Config.Candidate) checks
// nothing.
func (c *recordedCheck) task(t *store.Task) {
	if c == nil {
		return
	}
	ref := t.Strategy
	for i, st := range c.strategies {
		if ref.Hash == "" || ref.Name != st.Metadata.Name || ref.Version != st.Metadata.Version {
			continue
		}
		label := st.Metadata.Name + " " + st.Metadata.Version
		if ref.Hash != c.hashes[i] {
			c.note(&ChangedError{What: "strategy", Strategy: label, Was: ref.Hash, Now: c.hashes[i]}, t.ID)
			continue
		}
		if t.Routine != "" && c.routine != "" && t.Routine != c.routine {
			c.note(&ChangedError{What: "routine", Strategy: label, File: c.file, Was: t.Routine, Now: c.routine}, t.ID)
		}
		for block, was := range t.Rules {
			now, ok := c.rules[block]
			if c.rules == nil || !ok || now == was {
				continue
			}
			c.note(&ChangedError{What: "rules", Strategy: label, File: c.rulesFiles[block], Provider: block, Was: was, Now: now}, t.ID)
		}
	}
}

// note counts a task showing e, keeping the lowest task id.
func (c *recordedCheck) note(e *ChangedError, task string) {
	key := e.What + "\x00" + e.Strategy + "\x00" + e.Provider + "\x00" + e.Was
	if f, ok := c.found[key]; ok {
		f.Tasks++
		if task < f.Task {
			f.Task = task
		}
		return
	}
	e.Task, e.Tasks = task, 1
	c.found[key] = e
}

// err is every change found, one per line, strategies first.
func (c *recordedCheck) err() error {
	if c == nil || len(c.found) == 0 {
		return nil
	}
	order := map[string]int{"strategy": 0, "routine": 1, "rules": 2}
	all := make([]*ChangedError, 0, len(c.found))
	for _, e := range c.found {
		all = append(all, e)
	}
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if order[a.What] != order[b.What] {
			return order[a.What] < order[b.What]
		}
		if a.Strategy != b.Strategy {
			return a.Strategy < b.Strategy
		}
		if a.Provider != b.Provider {
			return a.Provider < b.Provider
		}
		return a.Task < b.Task
	})
	errs := make([]error, len(all))
	for i, e := range all {
		errs[i] = e
	}
	return errors.Join(errs...)
}
