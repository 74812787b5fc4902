package evolve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
)

// AuthorOnline is the author of the versions the online adapter records.
const AuthorOnline = "sextant online"

// CollOnlineHeads is the store collection that points each online pipeline
// (by name and the content hash of its configured strategy) at the newest
// version the online adapter recorded: the version its next task runs
// under.
const CollOnlineHeads = "online-heads"

// ErrNotOnline matches the refusal to change a strategy online that is not
// on an experimental branch: production strategies change only through
// gates (sextant evolve).
var ErrNotOnline = errors.New("only experimental strategies learn online")

// Lesson is what one finished task teaches the online adapter: the
// bullets its generation cited with its outcome, and the delta operations
// its curator proposed (the run's output variable named by [evolve] delta).
type Lesson struct {
	Use Use
	// Delta is the curator's output value ({"operations":[…]}), nil when
	// the run curated nothing.
	Delta any
}

// Learned is one online step.
type Learned struct {
	// Strategy is the next version, nil when the lesson changes nothing.
	Strategy *strategy.Strategy
	// Rejected is the curator's delta when it was refused (the citation
	// counts are learned without it).
	Rejected error
}

// Learn is one step of the online adapter (ACE's OnlineAdapter): the next
// version of head, derived by strategy.Revise with the TAG operations that
// count the task's cited bullets, then the curator's operations, then the
// hygiene operations (strategy.Tidy) the result needs. Only a strategy whose
// branch_type is experimental learns online (else ErrNotOnline). A curator
// delta that cannot be applied is reported in Learned.Rejected and left
// out; an empty lesson gives no new version.
func Learn(head *strategy.Strategy, l Lesson, h strategy.Hygiene, at time.Time) (*Learned, error) {
	if bt := head.Evolution.BranchType; bt != strategy.Experimental {
		return nil, fmt.Errorf("learn online: strategy %s %s is on the %s branch: %w", head.Metadata.Name, head.Metadata.Version, bt, ErrNotOnline)
	}
	out := &Learned{}
	var ops []strategy.Delta
	if l.Use.Task != "" {
		ops = TagCitations([]Use{l.Use}, head.Playbook)
	}
	curated, err := ParseDelta(l.Delta)
	if err == nil && len(curated) > 0 {
		for i := range curated {
			ev := "curated by task " + l.Use.Task
			if curated[i].Reason == "" {
				curated[i].Reason = ev
			} else {
				curated[i].Reason += " (" + ev + ")"
			}
		}
		if _, aerr := head.Apply(append(ops, curated...)...); aerr != nil {
			err = &RejectedError{Reasons: opProblems(aerr)}
		} else {
			ops = append(ops, curated...)
		}
	}
	if err != nil {
		out.Rejected = err
	}
	applied, err := head.Apply(ops...)
	if err != nil {
		return nil, fmt.Errorf("learn online: %w", err)
	}
	if len(applied.Ops) == 0 {
		return out, nil
	}
	ops = append(applied.Ops, applied.Strategy.Tidy(h)...)
	next, err := head.Revise(strategy.Revision{By: AuthorOnline + " (task " + l.Use.Task + ")", At: at, Playbook: ops})
	if err != nil {
		return nil, fmt.Errorf("learn online: %w", err)
	}
	out.Strategy = next
	return out, nil
}

// OnlineHead is where an online pipeline's newest version lives.
type OnlineHead struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Hash    string `json:"hash"`
	// File is the strategy file's name, in the configured strategy's
	// directory.
	File string `json:"file"`
}

func headKey(pipeline string, base *strategy.Strategy) string {
	return pipeline + "/" + base.Hash()
}

// Head returns the version an online pipeline's next task runs under: the
// newest one Record wrote for this pipeline and configured strategy base,
// read from dir and checked against its recorded hash, or base itself.
func Head(ctx context.Context, st *store.Store, dir, pipeline string, base *strategy.Strategy) (*strategy.Strategy, error) {
	c, err := store.NewCollection[OnlineHead](st, CollOnlineHeads)
	if err != nil {
		return nil, err
	}
	h, err := c.Get(ctx, headKey(pipeline, base))
	if errors.Is(err, store.ErrNotFound) {
		return base, nil
	}
	if err != nil {
		return nil, fmt.Errorf("online head of %s: %w", pipeline, err)
	}
	path := filepath.Join(dir, h.File)
	s, err := strategy.Load(path)
	if err != nil {
		return nil, fmt.Errorf("online head of %s: %w", pipeline, err)
	}
	if s.Hash() != h.Hash {
		return nil, fmt.Errorf("online head of %s: %s changed since it was recorded (hash %s, recorded %s)", pipeline, path, shortHash(s.Hash()), shortHash(h.Hash))
	}
	return s, nil
}

// onlineEvidence is the StrategyRecord evidence of an online version.
type onlineEvidence struct {
	Adapter  string `json:"adapter"`
	Task     string `json:"task"`
	Outcome  string `json:"outcome,omitempty"`
	Rejected string `json:"rejected,omitempty"`
}

// Record keeps an online version: its file in dir (strategy.WriteFile,
// never overwriting), its store record with lineage (parent = the version
// it learned from) and the task it learned from as evidence, and the
// pipeline's head pointer, so the next task runs under it. A version
// already recorded with other content (an offline promotion took the
// number) moves to the next free minor version. It returns the file's path.
func Record(ctx context.Context, st *store.Store, dir, pipeline string, base *strategy.Strategy, l *Learned, lesson Lesson, at time.Time) (string, error) {
	s := l.Strategy
	for {
		old, err := st.Strategy(ctx, s.Metadata.Name, s.Metadata.Version)
		if errors.Is(err, store.ErrNotFound) || (err == nil && old.Hash == s.Hash()) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("record online version: %w", err)
		}
		v, err := strategy.BumpMinor(s.Metadata.Version)
		if err != nil {
			return "", fmt.Errorf("record online version: %w", err)
		}
		s = s.Clone()
		s.ChangeLog[len(s.ChangeLog)-1].Version = v
		s.Metadata.Version = v
	}
	ev := onlineEvidence{Adapter: "online", Task: lesson.Use.Task, Outcome: string(lesson.Use.Tag)}
	if l.Rejected != nil {
		ev.Rejected = l.Rejected.Error()
	}
	evb, err := json.Marshal(ev)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, s.FileName())
	if err := s.WriteFile(path); err != nil && (!errors.Is(err, fs.ErrExist) || !sameFile(path, s.Encode())) {
		return "", fmt.Errorf("record online version: %w", err)
	}
	rec := &store.StrategyRecord{Name: s.Metadata.Name, Version: s.Metadata.Version, Parent: s.Metadata.ParentVersion,
		Hash: s.Hash(), Author: AuthorOnline, Created: at.UTC(), Evidence: evb}
	if err := st.PutStrategy(ctx, rec); err != nil {
		return "", fmt.Errorf("record online version: %w", err)
	}
	c, err := store.NewCollection[OnlineHead](st, CollOnlineHeads)
	if err != nil {
		return "", err
	}
	if err := c.Put(ctx, headKey(pipeline, base), OnlineHead{Name: s.Metadata.Name, Version: s.Metadata.Version, Hash: s.Hash(), File: s.FileName()}); err != nil {
		return "", fmt.Errorf("record online version: %w", err)
	}
	l.Strategy = s
	return path, nil
}
