package evolve

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/strategy"
)

// Use is one task's outcome and the playbook bullets its generation cited
// (run.Result.Cited, replay.Result.Cited): what ACE's bullet tagging
// counts.
type Use struct {
	Task  string
	Cited []string
	// Tag is what the outcome says about each cited bullet: helpful when
	// the task succeeded (or its reward is positive), harmful when it
	// failed (negative reward), neutral when it has no verdict (reward 0).
	Tag strategy.Tag
}

// UseOfReplay is the Use of one replayed task: helpful when it succeeded,
// harmful when it failed. A skipped replay (on_miss = "skip") has no
// verdict and counts for nothing (ok false), nor does one that cited no
// bullet.
func UseOfReplay(r replay.Result) (Use, bool) {
	if r.Skipped || len(r.Cited) == 0 {
		return Use{}, false
	}
	u := Use{Task: r.Task, Cited: r.Cited, Tag: strategy.TagHarmful}
	if r.Outcome.Success {
		u.Tag = strategy.TagHelpful
	}
	return u, true
}

// TagOfReward maps a reward to the tag of the bullets a task cited.
func TagOfReward(reward float64) strategy.Tag {
	switch {
	case reward > 0:
		return strategy.TagHelpful
	case reward < 0:
		return strategy.TagHarmful
	}
	return strategy.TagNeutral
}

// TagCitations returns the TAG operations that count uses: for each
// bullet of pb (in playbook order) and each tag, one TAG whose Count is
// the number of tasks that cited it with that outcome, its reason naming
// them ("cited by 2 tasks that succeeded: t1, t2"). Ids not in pb (a
// bullet removed since) are ignored.
func TagCitations(uses []Use, pb []strategy.Bullet) []strategy.Delta {
	tasks := map[string]map[strategy.Tag][]string{}
	for _, u := range uses {
		for _, id := range u.Cited {
			if tasks[id] == nil {
				tasks[id] = map[strategy.Tag][]string{}
			}
			if !slices.Contains(tasks[id][u.Tag], u.Task) {
				tasks[id][u.Tag] = append(tasks[id][u.Tag], u.Task)
			}
		}
	}
	what := map[strategy.Tag]string{strategy.TagHelpful: "succeeded", strategy.TagHarmful: "failed", strategy.TagNeutral: "had no verdict"}
	var ops []strategy.Delta
	for _, b := range pb {
		for _, tag := range []strategy.Tag{strategy.TagHelpful, strategy.TagHarmful, strategy.TagNeutral} {
			ts := slices.Sorted(slices.Values(tasks[b.ID][tag]))
			if len(ts) == 0 {
				continue
			}
			listed := strings.Join(ts[:min(len(ts), maxListed)], ", ")
			if len(ts) > maxListed {
				listed += ", …"
			}
			ops = append(ops, strategy.Delta{Op: strategy.OpTag, ID: b.ID, Tag: tag, Count: len(ts),
				Reason: fmt.Sprintf("cited by %s that %s: %s", plural(len(ts), "task"), what[tag], listed)})
		}
	}
	return ops
}

// ParseDelta reads a curator's delta operations from a run's output value
// (the JSON object {"operations":[…]} that a curate step replies with, as
// decoded into the run's variables), strictly, as the curate mutator reads
// its curator. A nil value proposes nothing.
func ParseDelta(v any) ([]strategy.Delta, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, &RejectedError{Reasons: []string{fmt.Sprintf("not JSON: %v", err)}}
	}
	return parseOperations(string(b))
}
