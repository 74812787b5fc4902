package evolve

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

// Evaluated is one candidate after replay, comparison and the gate chain.
type Evaluated struct {
	// Mutator is the name of the mutator that proposed the candidate.
	Mutator    string
	Strategy   *strategy.Strategy
	Comparison *sdk.Comparison
	// Result is Evaluate's verdict on Comparison.
	Result Result
}

// ID is the candidate's short id: the first 12 hex digits of its content
// hash. Review requests and archived candidates are kept under it.
// It is "" without a strategy.
func (e Evaluated) ID() string {
	if e.Strategy == nil {
		return ""
	}
	return shortHash(e.Strategy.Hash())
}

func shortHash(h string) string { return h[:min(len(h), 12)] }

// Select picks the candidate to promote: among those the gate chain
// passed, the one with the largest gain on metric ("" means
// success_rate; the gain is the effect in the metric's good direction).
// Ties go to the smaller total parameter change (the sum of |to − from|
// over the comparison's diff), then to the mutator name, then to the
// content hash, so the choice never depends on the order of cands.
//
// winner is nil when no candidate passed. losers are all the others, in
// the order of cands: those that failed, those waiting for review and
// the passing ones that gained less. A candidate without a comparison, or
// whose comparison lacks the metric, is never selected.
func Select(cands []Evaluated, metric string) (winner *Evaluated, losers []Evaluated) {
	if metric == "" {
		metric = MetricSuccessRate
	}
	best := -1
	var bestKey selectKey
	for i, c := range cands {
		k, ok := keyOf(c, metric)
		if !ok || c.Result.Ruling != sdk.Pass {
			continue
		}
		if best < 0 || k.less(bestKey) {
			best, bestKey = i, k
		}
	}
	for i, c := range cands {
		if i != best {
			losers = append(losers, c)
		}
	}
	if best < 0 {
		return nil, losers
	}
	w := cands[best]
	return &w, losers
}

type selectKey struct {
	gain, change float64
	mutator      string
	hash         string
}

// less orders keys best first.
func (a selectKey) less(b selectKey) bool {
	if a.gain != b.gain {
		return a.gain > b.gain
	}
	if a.change != b.change {
		return a.change < b.change
	}
	if a.mutator != b.mutator {
		return a.mutator < b.mutator
	}
	return a.hash < b.hash
}

func keyOf(c Evaluated, metric string) (selectKey, bool) {
	if c.Strategy == nil || c.Comparison == nil {
		return selectKey{}, false
	}
	m, ok := findMetric(c.Comparison, metric)
	if !ok || math.IsNaN(m.Effect) {
		return selectKey{}, false
	}
	var change float64
	for _, p := range c.Comparison.Diff.Parameters {
		change += math.Abs(p.To - p.From)
	}
	return selectKey{gain: gain(m), change: change, mutator: c.Mutator, hash: c.Strategy.Hash()}, true
}

// StrategyID names one strategy version and its content hash.
type StrategyID struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Hash    string `json:"hash"`
}

// Summary is a comparison without its per-task rows and strategy
// documents: what a promotion record, an archived candidate and a review
// request keep as evidence. The flipped tasks are counted, and the first
// ten listed.
type Summary struct {
	Baseline       StrategyID       `json:"baseline"`
	Candidate      StrategyID       `json:"candidate"`
	Diff           sdk.StrategyDiff `json:"diff"`
	Metrics        []sdk.Metric     `json:"metrics"`
	Fidelity       float64          `json:"fidelity"`
	Regressed      int              `json:"regressed"`
	Improved       int              `json:"improved"`
	RegressedTasks []string         `json:"regressed_tasks,omitempty"`
	ImprovedTasks  []string         `json:"improved_tasks,omitempty"`
}

// Summarize returns the Summary of c.
func Summarize(c *sdk.Comparison) Summary {
	regressed, improved := Flips(c.Tasks)
	id := func(r sdk.StrategyRef) StrategyID { return StrategyID{Name: r.Name, Version: r.Version, Hash: r.Hash} }
	return Summary{
		Baseline: id(c.Baseline), Candidate: id(c.Candidate),
		Diff: c.Diff, Metrics: c.Metrics, Fidelity: c.Fidelity,
		Regressed: len(regressed), Improved: len(improved),
		RegressedTasks: regressed[:min(len(regressed), maxListed)],
		ImprovedTasks:  improved[:min(len(improved), maxListed)],
	}
}

// Evidence is what justified a promotion, stored as JSON in its
// store.StrategyRecord: the mutator, the comparison summary, every
// gate's verdict and, for a reviewed candidate, the person's decision.
type Evidence struct {
	Mutator    string    `json:"mutator,omitempty"`
	Comparison Summary   `json:"comparison"`
	Gates      Result    `json:"gates"`
	Review     *Decision `json:"review,omitempty"`
}

// Decision is a person's answer to a review request.
type Decision struct {
	ID     string    `json:"id"`
	Status string    `json:"status"`
	By     string    `json:"by"`
	At     time.Time `json:"at"`
	Note   string    `json:"note,omitempty"`
}

// Promote makes winner the new version of its strategy: it writes the
// strategy file dir/<name>-<version>.toml (strategy.WriteFile: a file
// appears complete or not at all and is never overwritten) and records
// the version in the store with its lineage, content hash, author
// "sextant evolve" (the reviewer, for an approval), time at and the
// Evidence as JSON. It returns the file's path.
//
// Only a candidate the gate chain passed is promoted; one waiting for
// review is promoted by Approve. The candidate must be the one that was
// compared (its hash equal to Comparison.Candidate.Hash).
//
// Promote is idempotent: when the file already holds exactly this
// candidate and the store already has this version with this hash,
// nothing changes, so a promotion interrupted between the file and the
// record can be run again. A file or record of the same version with
// other content is an error (fs.ErrExist, store.ErrExists).
func Promote(ctx context.Context, st *store.Store, dir string, winner Evaluated, at time.Time) (path string, err error) {
	if err := checkPromotable("promote "+describeCandidate(winner), winner, at); err != nil {
		return "", err
	}
	if winner.Result.Ruling != sdk.Pass {
		return "", fmt.Errorf("promote %s: the gates ruled %s, not pass%s", describeCandidate(winner), winner.Result.Ruling, reviewHint(winner.Result.Ruling))
	}
	return promote(ctx, st, dir, winner.Strategy, winner.Mutator, Summarize(winner.Comparison), winner.Result, at, nil)
}

func reviewHint(r sdk.Ruling) string {
	if r == sdk.Review {
		return " (queue it for review and approve it)"
	}
	return ""
}

func describeCandidate(e Evaluated) string {
	if e.Strategy == nil {
		return "candidate"
	}
	s := e.Strategy.Metadata.Name + " " + e.Strategy.Metadata.Version
	if e.Mutator != "" {
		s += " (" + e.Mutator + ")"
	}
	return s
}

// checkPromotable checks what every promotion (and review request)
// needs; what names the operation in errors.
func checkPromotable(what string, e Evaluated, at time.Time) error {
	switch {
	case e.Strategy == nil:
		return fmt.Errorf("%s: no strategy", what)
	case e.Comparison == nil:
		return fmt.Errorf("%s: no comparison (nothing justifies it)", what)
	case at.IsZero():
		return fmt.Errorf("%s: missing time (at)", what)
	}
	if h := e.Strategy.Hash(); e.Comparison.Candidate.Hash != h {
		return fmt.Errorf("%s: the strategy (hash %s) is not the candidate that was compared (hash %s)", what, shortHash(h), shortHash(e.Comparison.Candidate.Hash))
	}
	return nil
}

// promote writes s and its record; sum and gates are its evidence.
func promote(ctx context.Context, st *store.Store, dir string, s *strategy.Strategy, mutator string, sum Summary, gates Result, at time.Time, review *Decision) (string, error) {
	what := "promote " + describeCandidate(Evaluated{Mutator: mutator, Strategy: s})
	ev, err := json.Marshal(Evidence{Mutator: mutator, Comparison: sum, Gates: gates, Review: review})
	if err != nil {
		return "", fmt.Errorf("%s: evidence: %w", what, err)
	}
	// A version recorded with other content is refused before any file
	// is written, so a refused promotion leaves nothing behind.
	switch old, err := st.Strategy(ctx, s.Metadata.Name, s.Metadata.Version); {
	case err == nil && old.Hash != s.Hash():
		return "", fmt.Errorf("%s: version %s is recorded with hash %s: %w", what, s.Metadata.Version, shortHash(old.Hash), store.ErrExists)
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return "", fmt.Errorf("%s: %w", what, err)
	}
	path := filepath.Join(dir, s.FileName())
	if err := s.WriteFile(path); err != nil {
		if !errors.Is(err, fs.ErrExist) || !sameFile(path, s.Encode()) {
			return "", fmt.Errorf("%s: %w", what, err)
		}
	}
	author := Author
	if review != nil { // the lineage names who decided, not the tool
		author = review.By
	}
	rec := &store.StrategyRecord{
		Name: s.Metadata.Name, Version: s.Metadata.Version, Parent: s.Metadata.ParentVersion,
		Hash: s.Hash(), Author: author, Created: at.UTC(), Evidence: ev,
	}
	if err := st.PutStrategy(ctx, rec); err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	return path, nil
}

func sameFile(path string, want []byte) bool {
	got, err := os.ReadFile(path)
	return err == nil && bytes.Equal(got, want)
}

// CollArchived is the store collection of archived candidates.
const CollArchived = "archived-candidates"

// ArchivedCandidate is a candidate that was evaluated and not promoted,
// kept with its evidence. No strategy file is written for it.
type ArchivedCandidate struct {
	ID      string `json:"id"`
	Mutator string `json:"mutator,omitempty"`
	Name    string `json:"name"`
	Version string `json:"version"`
	Parent  string `json:"parent,omitempty"`
	// Hash is the content hash of the candidate as it was compared.
	Hash string `json:"hash"`
	// Strategy is the candidate's TOML with evolution.branch_type set to
	// archived (so its hash differs from Hash).
	Strategy string `json:"strategy"`
	// Reason says why it was not promoted.
	Reason   string    `json:"reason"`
	Evidence Evidence  `json:"evidence"`
	Archived time.Time `json:"archived"`
}

// Archive records losers in the store collection CollArchived, under
// "<name>/<id>", each with branch_type archived, its evidence and why it
// lost: the gates that failed it, or the winner it lost to (winner may
// be nil). Writing the same loser again replaces its record.
func Archive(ctx context.Context, st *store.Store, winner *Evaluated, losers []Evaluated, at time.Time) error {
	if at.IsZero() {
		return errors.New("archive: missing time (at)")
	}
	coll, err := store.NewCollection[ArchivedCandidate](st, CollArchived)
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	for _, l := range losers {
		if l.Strategy == nil {
			return fmt.Errorf("archive %s: no strategy", describeCandidate(l))
		}
		a := l.Strategy.Clone()
		a.Evolution.BranchType = strategy.Archived
		rec := ArchivedCandidate{
			ID: l.ID(), Mutator: l.Mutator,
			Name: a.Metadata.Name, Version: a.Metadata.Version, Parent: a.Metadata.ParentVersion,
			Hash: l.Strategy.Hash(), Strategy: string(a.Encode()),
			Reason: archiveReason(l, winner), Archived: at.UTC(),
			Evidence: Evidence{Mutator: l.Mutator, Gates: l.Result},
		}
		if l.Comparison != nil {
			rec.Evidence.Comparison = Summarize(l.Comparison)
		}
		if err := coll.Put(ctx, rec.Name+"/"+rec.ID, rec); err != nil {
			return fmt.Errorf("archive %s: %w", describeCandidate(l), err)
		}
	}
	return nil
}

// archiveReason says why l was not promoted.
func archiveReason(l Evaluated, winner *Evaluated) string {
	if l.Comparison == nil {
		return "no comparison"
	}
	if l.Result.Ruling == sdk.Fail || (l.Result.Ruling != sdk.Pass && l.Result.Ruling != sdk.Review) {
		var failed []string
		for _, g := range l.Result.Gates {
			if g.Ruling == sdk.Fail {
				failed = append(failed, g.Name)
			}
		}
		if len(failed) == 0 {
			return "gates ruled " + string(l.Result.Ruling)
		}
		return "gates failed: " + strings.Join(failed, ", ")
	}
	if winner != nil {
		return fmt.Sprintf("not selected: %s candidate %s was promoted", winner.Mutator, winner.ID())
	}
	return "not selected"
}

// ListArchived returns the archived candidates of the strategy name
// ("" for all), by name, then archive time, then id.
func ListArchived(ctx context.Context, st *store.Store, name string) ([]ArchivedCandidate, error) {
	coll, err := store.NewCollection[ArchivedCandidate](st, CollArchived)
	if err != nil {
		return nil, fmt.Errorf("list archived candidates: %w", err)
	}
	prefix := ""
	if name != "" {
		prefix = name + "/"
	}
	var out []ArchivedCandidate
	if err := coll.Scan(ctx, prefix, func(_ string, a ArchivedCandidate) error {
		out = append(out, a)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("list archived candidates: %w", err)
	}
	slices.SortStableFunc(out, func(a, b ArchivedCandidate) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), a.Archived.Compare(b.Archived), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

// Settlement is what Settle did with a set of evaluated candidates.
type Settlement struct {
	// Winner is the promoted candidate, nil if none passed.
	Winner *Evaluated
	// Path is the promoted strategy file.
	Path string
	// Reviews are the requests queued: the candidates waiting for review,
	// when none passed.
	Reviews []ReviewRequest
	// Archived are the candidates recorded in CollArchived.
	Archived []Evaluated
}

// Settle ends an evolution round (DESIGN §7): the best passing candidate
// (Select on metric) is promoted into dir; when none passed, every
// candidate waiting for review is queued (Queue, under pipeline); the
// rest are archived. Candidates waiting for review are archived too when
// another was promoted, since they would now be a second child of the same
// version. For a dry run, call Select and nothing else.
func Settle(ctx context.Context, st *store.Store, dir, pipeline string, cands []Evaluated, metric string, at time.Time) (*Settlement, error) {
	winner, losers := Select(cands, metric)
	out := &Settlement{Winner: winner}
	var archive []Evaluated
	if winner != nil {
		path, err := Promote(ctx, st, dir, *winner, at)
		if err != nil {
			return out, err
		}
		out.Path = path
		archive = losers
	} else {
		for _, l := range losers {
			if l.Result.Ruling != sdk.Review || l.Comparison == nil || l.Strategy == nil {
				archive = append(archive, l)
				continue
			}
			r, err := Queue(ctx, st, pipeline, l, at)
			if err != nil {
				return out, err
			}
			out.Reviews = append(out.Reviews, *r)
		}
	}
	if err := Archive(ctx, st, winner, archive, at); err != nil {
		return out, err
	}
	out.Archived = archive
	return out, nil
}
