package evolve

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

// A pipeline's live strategy version is the one its runs use. The store
// collection CollLive holds it under the pipeline's name, with every move
// that led there. Before any move the pipeline's configured [strategy]
// file is live, so a pipeline no one promoted runs as it always did; a
// pipeline configured with another file (or whose file was edited) since
// the last move runs that file until the next move, since editing the
// configuration is a deployment too.
// Moves are Promote-the-version (MoveLive), a rollback, an evolution's
// winner and an approved review (ApproveLive); each is a compare-and-swap
// on the version its caller read, so of two operators moving it at once
// one wins and the other gets ErrLiveMoved.

// CollLive is the store collection of the pipelines' live versions.
const CollLive = "live-strategies"

// The moves of a live version (LiveVersion.Action).
const (
	MoveConfigured = "configured" // the pipeline's [strategy] file, before any move
	MovePromote    = "promote"    // sextant promote
	MoveRollback   = "rollback"   // sextant rollback
	MoveEvolve     = "evolve"     // sextant evolve promoted its winner
	MoveApprove    = "approve"    // sextant review approve
)

// ErrLiveMoved matches a move refused because the live version is no
// longer the one its caller expected (another operator moved it).
var ErrLiveMoved = errors.New("the live version moved")

// ErrStale matches approving a candidate whose parent is no longer the
// pipeline's live version: promoting it would silently drop what the
// live version changed.
var ErrStale = errors.New("its parent is no longer live")

// LiveVersion is one strategy version as the live one of a pipeline, and
// the move that made it live.
type LiveVersion struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Hash    string `json:"hash"`
	// File is the strategy file, relative to the pipeline's directory.
	File   string    `json:"file"`
	Action string    `json:"action"`
	By     string    `json:"by,omitempty"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at,omitzero"`
	// From is the version that was live before.
	From string `json:"from,omitempty"`
}

// liveRecord is what CollLive stores under a pipeline's name.
type liveRecord struct {
	Pipeline string      `json:"pipeline"`
	Current  LiveVersion `json:"current"`
	// Configured is the pipeline's [strategy] file when Current was made
	// live: a pipeline configured with another file (or an edited one)
	// since runs that, until the next move.
	Configured LiveVersion   `json:"configured"`
	History    []LiveVersion `json:"history"` // oldest first; the last is Current
}

// reconfigured is rec as it stands with conf as the pipeline's
// configured strategy: unchanged, or, when conf is not the file it was
// recorded with, conf live (the configuration is a deployment of its own).
func (rec liveRecord) reconfigured(conf LiveVersion) liveRecord {
	if rec.Configured.Hash == conf.Hash && rec.Configured.File == conf.File {
		return rec
	}
	conf.From = rec.Current.Version
	rec.Current, rec.Configured = conf, conf
	rec.History = append(slices.Clip(rec.History), conf)
	return rec
}

// Live is a pipeline's live version as commands show it.
type Live struct {
	Pipeline string `json:"pipeline"`
	// Live is the live version: the last move, or Configured.
	Live LiveVersion `json:"live"`
	// Configured is the pipeline's [strategy] file.
	Configured LiveVersion `json:"configured"`
	// Pinned is [strategy] pin: runs use Configured whatever is live.
	Pinned bool `json:"pinned"`
	// Runs is the version runs use (Live, unless pinned, or unless Live is
	// of another strategy than the configured file).
	Runs LiveVersion `json:"runs"`
	// History lists the moves, oldest first (empty before the first).
	History []LiveVersion `json:"history"`
}

// Configured is the pipeline's [strategy] file as a LiveVersion, and the
// strategy in it.
func Configured(p *pipeline.Pipeline) (LiveVersion, *strategy.Strategy, error) {
	if p.Strategy.File == "" {
		return LiveVersion{}, nil, sdk.Invalid(sdk.Problem{File: p.File, Line: 1, Element: "strategy",
			Message: `the pipeline has no strategy to make live; add [strategy] file = "strategy.toml"`})
	}
	s, err := strategy.Load(p.Path(p.Strategy.File))
	if err != nil {
		return LiveVersion{}, nil, err
	}
	return LiveVersion{Name: s.Metadata.Name, Version: s.Metadata.Version, Hash: s.Hash(),
		File: filepath.ToSlash(filepath.Clean(p.Strategy.File)), Action: MoveConfigured}, s, nil
}

func liveColl(st *store.Store) (*store.Collection[liveRecord], error) {
	return store.NewCollection[liveRecord](st, CollLive)
}

// GetLive returns p's live version. st may be nil (no store yet): the
// configured file is live.
func GetLive(ctx context.Context, st *store.Store, p *pipeline.Pipeline) (*Live, error) {
	conf, _, err := Configured(p)
	if err != nil {
		return nil, err
	}
	return LiveNamed(ctx, st, p.Name, conf, p.Strategy.Pin)
}

// LiveNamed is GetLive for a pipeline known by its name, its configured
// version and its pin: what a Temporal worker, whose store another
// process holds, sends that process to learn which version to run.
func LiveNamed(ctx context.Context, st *store.Store, name string, conf LiveVersion, pinned bool) (*Live, error) {
	out := &Live{Pipeline: name, Live: conf, Configured: conf, Pinned: pinned, History: []LiveVersion{}}
	if st != nil {
		c, err := liveColl(st)
		if err != nil {
			return nil, err
		}
		switch rec, err := c.Get(ctx, name); {
		case err == nil:
			rec = rec.reconfigured(conf)
			out.Live, out.History = rec.Current, rec.History
		case !errors.Is(err, store.ErrNotFound):
			return nil, fmt.Errorf("live version of %s: %w", name, err)
		}
	}
	out.Runs = out.Live
	if out.Pinned || out.Live.Name != conf.Name {
		out.Runs = conf
	}
	return out, nil
}

// RunStrategy is the strategy p's runs use (Live.Runs), read from its
// file and checked against the hash it was made live with: a promoted
// file is immutable, and one edited since is an error, not a silent
// change of behaviour. It returns the file's path relative to p's
// directory too.
func RunStrategy(ctx context.Context, st *store.Store, p *pipeline.Pipeline) (*strategy.Strategy, string, error) {
	l, err := GetLive(ctx, st, p)
	if err != nil {
		return nil, "", err
	}
	v := l.Runs
	s, err := strategy.Load(p.Path(filepath.FromSlash(v.File)))
	if err != nil {
		return nil, "", fmt.Errorf("live strategy of %s: %w", p.Name, err)
	}
	if s.Hash() != v.Hash {
		return nil, "", fmt.Errorf("live strategy of %s: %s changed since %s %s was made live (hash %s, recorded %s); restore it, or promote a version",
			p.Name, v.File, v.Name, v.Version, shortHash(s.Hash()), shortHash(v.Hash))
	}
	return s, filepath.FromSlash(v.File), nil
}

// Move is a request to change a pipeline's live version.
type Move struct {
	// Version is the version to make live; for a rollback "" means the
	// version live before the current one.
	Version string
	// Action is MovePromote, MoveRollback, MoveEvolve or MoveApprove.
	Action string
	By     string
	Reason string
	At     time.Time
	// Expect, when not "", is the live version the caller saw: the move
	// is refused with ErrLiveMoved if another one is live now.
	Expect string
}

// MoveLive makes a version of p's strategy live. The version must be the
// configured file's, or one recorded in the store (promoted by evolve or
// an approval) whose file, beside the configured one, still has the
// recorded hash; anything else is an invalid-input error and nothing
// changes. Moving to the version already live changes nothing and is not
// an error.
func MoveLive(ctx context.Context, st *store.Store, p *pipeline.Pipeline, m Move) (*Live, error) {
	what := fmt.Sprintf("%s %s", m.Action, p.Name)
	if m.Version != "" {
		what += " " + m.Version
	}
	switch {
	case m.Action != MovePromote && m.Action != MoveRollback && m.Action != MoveEvolve && m.Action != MoveApprove:
		return nil, fmt.Errorf("%s: unknown move %q", what, m.Action)
	case strings.TrimSpace(m.By) == "":
		return nil, fmt.Errorf("%s: missing who (by)", what)
	case m.At.IsZero():
		return nil, fmt.Errorf("%s: missing time (at)", what)
	case len(m.Reason) > 4096 || len(m.By) > 200:
		return nil, invalid(what, "reason or by too long")
	}
	cur, err := GetLive(ctx, st, p)
	if err != nil {
		return nil, err
	}
	version := m.Version
	if version == "" {
		if m.Action != MoveRollback {
			return nil, invalid(what, "name the version to make live")
		}
		if version = cur.Live.From; version == "" {
			return nil, invalid(what, fmt.Sprintf("nothing to roll back to: %s %s has been live since it was configured (name a version)", cur.Live.Name, cur.Live.Version))
		}
	}
	to, err := resolveVersion(ctx, st, p, cur, version)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	to.Action, to.By, to.Reason, to.At = m.Action, m.By, m.Reason, m.At.UTC()
	c, err := liveColl(st)
	if err != nil {
		return nil, err
	}
	conf := cur.Configured
	_, err = c.Update(ctx, p.Name, func(rec liveRecord, found bool) (liveRecord, error) {
		if !found {
			rec = liveRecord{Pipeline: p.Name, Current: conf, Configured: conf, History: []LiveVersion{conf}}
		}
		rec = rec.reconfigured(conf)
		if m.Expect != "" && rec.Current.Version != m.Expect {
			return rec, fmt.Errorf("%s: %w: %s is live now (%s by %s at %s), not %s; read it again and decide",
				what, ErrLiveMoved, rec.Current.Version, rec.Current.Action, rec.Current.By, rec.Current.At.Format(time.RFC3339), m.Expect)
		}
		if rec.Current.Name == to.Name && rec.Current.Version == to.Version && rec.Current.Hash == to.Hash {
			return rec, errUnchanged
		}
		to.From = rec.Current.Version
		rec.Current = to
		rec.History = append(rec.History, to)
		return rec, nil
	})
	if err != nil && !errors.Is(err, errUnchanged) {
		return nil, err
	}
	if err == nil {
		if err := Supersede(ctx, st, p.Name, to, m.At); err != nil {
			return nil, err
		}
	}
	return GetLive(ctx, st, p)
}

// errUnchanged stops an Update that would write what is there already.
var errUnchanged = errors.New("unchanged")

func invalid(what, msg string) error {
	return sdk.Invalid(sdk.Problem{Message: what + ": " + msg})
}

// resolveVersion finds version of the configured strategy: the configured
// file itself, a version live before whose file still has the hash it had
// (a file configured earlier), or a recorded version whose file lies
// beside the configured one.
func resolveVersion(ctx context.Context, st *store.Store, p *pipeline.Pipeline, cur *Live, version string) (LiveVersion, error) {
	conf := cur.Configured
	if version == conf.Version {
		return conf, nil
	}
	for _, h := range slices.Backward(cur.History) {
		if h.Name != conf.Name || h.Version != version || h.Action != MoveConfigured {
			continue
		}
		if s, err := strategy.Load(p.Path(filepath.FromSlash(h.File))); err == nil && s.Hash() == h.Hash {
			return LiveVersion{Name: h.Name, Version: h.Version, Hash: h.Hash, File: h.File}, nil
		}
	}
	rec, err := st.Strategy(ctx, conf.Name, version)
	if errors.Is(err, store.ErrNotFound) || (err != nil && errors.Is(err, store.ErrInvalid)) {
		known, kerr := knownVersions(ctx, st, cur)
		if kerr != nil {
			return LiveVersion{}, kerr
		}
		return LiveVersion{}, sdk.Invalid(sdk.Problem{Message: fmt.Sprintf("no version %q of strategy %s: only %s can be made live (the configured file, or a version evolve or a review promoted)",
			version, conf.Name, strings.Join(known, ", "))})
	}
	if err != nil {
		return LiveVersion{}, err
	}
	rel := filepath.Join(filepath.Dir(filepath.FromSlash(conf.File)), conf.Name+"-"+version+".toml")
	if _, err := os.Stat(p.Path(rel)); errors.Is(err, os.ErrNotExist) {
		return LiveVersion{}, sdk.Invalid(sdk.Problem{Message: fmt.Sprintf("%s %s is recorded but its file %s is missing (promoted files belong in the repository: restore it)", conf.Name, version, filepath.ToSlash(rel))})
	}
	s, err := strategy.Load(p.Path(rel))
	switch {
	case err != nil:
		return LiveVersion{}, err
	case s.Hash() != rec.Hash:
		return LiveVersion{}, sdk.Invalid(sdk.Problem{Message: fmt.Sprintf("%s changed since %s %s was recorded (hash %s, recorded %s): restore it", filepath.ToSlash(rel), conf.Name, version, shortHash(s.Hash()), shortHash(rec.Hash))})
	}
	return LiveVersion{Name: conf.Name, Version: version, Hash: rec.Hash, File: filepath.ToSlash(rel)}, nil
}

// knownVersions lists the versions that can be made live: the configured
// one, those configured before, then the recorded ones, oldest first.
func knownVersions(ctx context.Context, st *store.Store, cur *Live) ([]string, error) {
	conf := cur.Configured
	log, err := st.StrategyLog(ctx, conf.Name)
	if err != nil {
		return nil, err
	}
	out := []string{conf.Version}
	for _, h := range cur.History {
		if h.Action == MoveConfigured && h.Name == conf.Name && !slices.Contains(out, h.Version) {
			out = append(out, h.Version)
		}
	}
	for _, r := range log {
		if !slices.Contains(out, r.Version) {
			out = append(out, r.Version)
		}
	}
	return out, nil
}

// LiveFor returns the pipelines whose live record concerns the strategy
// name, by pipeline name: what `sextant strategy log` shows beside the
// versions.
func LiveFor(ctx context.Context, st *store.Store, name string) ([]Live, error) {
	c, err := liveColl(st)
	if err != nil {
		return nil, err
	}
	var out []Live
	err = c.Scan(ctx, "", func(_ string, rec liveRecord) error {
		for _, h := range rec.History {
			if h.Name == name {
				out = append(out, Live{Pipeline: rec.Pipeline, Live: rec.Current, History: rec.History})
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("live versions of %s: %w", name, err)
	}
	return out, nil
}

// ReviewSuperseded is the status of a review request whose sibling (a
// candidate of the same baseline) was made live: approving it would
// drop that sibling's change.
const ReviewSuperseded ReviewStatus = "superseded"

// Supersede marks superseded every pending review request of pipeline
// whose baseline is the parent of live (the version just made live),
// except live's own candidate. The strategy record gives the parent; a
// version without one (the configured file) supersedes nothing.
func Supersede(ctx context.Context, st *store.Store, pipeline string, live LiveVersion, at time.Time) error {
	rec, err := st.Strategy(ctx, live.Name, live.Version)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if rec.Parent == "" {
		return nil
	}
	pend, err := ListReviews(ctx, st, ReviewPending)
	if err != nil {
		return err
	}
	for _, r := range pend {
		if r.Pipeline != pipeline || r.Baseline.Name != live.Name || r.Baseline.Version != rec.Parent || r.Comparison.Candidate.Hash == live.Hash {
			continue
		}
		note := fmt.Sprintf("superseded: sibling %s %s was made live (%s by %s)", live.Name, live.Version, live.Action, live.By)
		if _, err := decide(ctx, st, &r, ReviewSuperseded, live.By, note, at); err != nil {
			return err
		}
	}
	return nil
}

// StaleError is ApproveLive's refusal of a candidate whose parent is not
// the live version; it matches ErrStale and sdk.ErrInvalid.
type StaleError struct {
	ID       string
	Pipeline string
	// Parent is the candidate's baseline; Live the live version now.
	Parent, Live LiveVersion
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("approve review %s: %v: it was derived from %s %s, but %s %s is live in %s (%s by %s); approving it would drop that version's changes",
		e.ID, ErrStale, e.Parent.Name, e.Parent.Version, e.Live.Name, e.Live.Version, e.Pipeline, e.Live.Action, e.Live.By)
}

// Is makes a StaleError match ErrStale and sdk.ErrInvalid.
func (e *StaleError) Is(target error) bool { return target == ErrStale || target == sdk.ErrInvalid }

// ApproveLive approves the pending review request id as Approve does
// (the strategy file beside p's configured one; dir, when not "", must
// be that directory) and makes the candidate p's live version, superseding its siblings.
// A candidate whose parent is not the live version is refused with a
// *StaleError and nothing changes; the live version moving between the
// check and the move is ErrLiveMoved, and then the candidate is recorded
// but not live.
func ApproveLive(ctx context.Context, st *store.Store, p *pipeline.Pipeline, dir, id, by, note string, at time.Time) (*ReviewRequest, *Live, error) {
	r, err := pending(ctx, st, "approve", id, by, at)
	if err != nil {
		return nil, nil, err
	}
	if r.Pipeline != "" && r.Pipeline != p.Name {
		return nil, nil, invalid("approve review "+r.ID, fmt.Sprintf("it is a candidate of pipeline %s, not %s", r.Pipeline, p.Name))
	}
	cur, err := GetLive(ctx, st, p)
	if err != nil {
		return nil, nil, err
	}
	if cur.Live.Name == r.Baseline.Name && (cur.Live.Version != r.Baseline.Version || cur.Live.Hash != r.Baseline.Hash) {
		return nil, nil, &StaleError{ID: r.ID, Pipeline: p.Name, Parent: LiveVersion{Name: r.Baseline.Name, Version: r.Baseline.Version, Hash: r.Baseline.Hash}, Live: cur.Live}
	}
	if conf := filepath.Dir(p.Path(p.Strategy.File)); dir == "" {
		dir = conf
	} else if filepath.Clean(dir) != filepath.Clean(conf) {
		return nil, nil, invalid("approve review "+r.ID, fmt.Sprintf("a live version's file lies beside the configured strategy, in %s, not %s", conf, dir))
	}
	done, err := Approve(ctx, st, dir, r.ID, by, note, at)
	if err != nil {
		return nil, nil, err
	}
	reason := "review " + done.ID
	if note != "" {
		reason += ": " + note
	}
	live, err := MoveLive(ctx, st, p, Move{Version: done.Comparison.Candidate.Version, Action: MoveApprove, By: by,
		Reason: reason, At: at, Expect: cur.Live.Version})
	if err != nil {
		return done, nil, err
	}
	return done, live, nil
}
