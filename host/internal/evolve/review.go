package evolve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

// The review queue (DESIGN §7, "Review"): a candidate whose gate chain
// ruled review waits in the store collection store.CollReviews until a
// person approves it (which promotes it) or rejects it. `sextant review
// list|show|approve|reject` are ListReviews, GetReview, Approve and
// Reject.

// ReviewStatus is where a review request stands.
type ReviewStatus string

// The review statuses.
const (
	ReviewPending  ReviewStatus = "pending"
	ReviewApproved ReviewStatus = "approved"
	ReviewRejected ReviewStatus = "rejected"
)

// ErrDecided matches approving or rejecting a review request that is no
// longer pending.
var ErrDecided = errors.New("already decided")

// ReviewRequest is a candidate waiting for a person, and, once decided,
// the decision.
type ReviewRequest struct {
	// ID is the candidate's short id (Evaluated.ID): the first 12 hex
	// digits of its content hash.
	ID       string     `json:"id"`
	Pipeline string     `json:"pipeline,omitempty"`
	Mutator  string     `json:"mutator,omitempty"`
	Baseline StrategyID `json:"baseline"`
	// Candidate is the candidate strategy file, as it will be written.
	Candidate  string       `json:"candidate"`
	Comparison Summary      `json:"comparison"`
	Result     Result       `json:"result"`
	Created    time.Time    `json:"created"`
	Status     ReviewStatus `json:"status"`
	// Decided, By and Note are set by Approve or Reject.
	Decided time.Time `json:"decided,omitzero"`
	By      string    `json:"by,omitempty"`
	Note    string    `json:"note,omitempty"`
	// Path is the strategy file Approve wrote.
	Path string `json:"path,omitempty"`
}

func reviews(st *store.Store) (*store.Collection[ReviewRequest], error) {
	return store.NewCollection[ReviewRequest](st, store.CollReviews)
}

// Queue puts cand, which the gate chain ruled review, in the review
// queue under pipeline, created at at, and returns the request. The id is
// the candidate's short hash, so queuing the same candidate again returns
// the request already there, unchanged (pending or decided).
func Queue(ctx context.Context, st *store.Store, pipeline string, cand Evaluated, at time.Time) (*ReviewRequest, error) {
	what := "queue " + describeCandidate(cand) + " for review"
	if err := checkPromotable(what, cand, at); err != nil {
		return nil, err
	}
	if cand.Result.Ruling != sdk.Review {
		return nil, fmt.Errorf("%s: the gates ruled %s, not review", what, cand.Result.Ruling)
	}
	coll, err := reviews(st)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	id := cand.ID()
	switch old, err := coll.Get(ctx, id); {
	case err == nil:
		return &old, nil
	case !errors.Is(err, store.ErrNotFound):
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	sum := Summarize(cand.Comparison)
	r := ReviewRequest{
		ID: id, Pipeline: pipeline, Mutator: cand.Mutator,
		Baseline: sum.Baseline, Candidate: string(cand.Strategy.Encode()),
		Comparison: sum, Result: cand.Result,
		Created: at.UTC(), Status: ReviewPending,
	}
	if err := coll.Put(ctx, id, r); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return &r, nil
}

// ListReviews returns the review requests with the given status ("" for
// all), oldest first (then by id).
func ListReviews(ctx context.Context, st *store.Store, status ReviewStatus) ([]ReviewRequest, error) {
	coll, err := reviews(st)
	if err != nil {
		return nil, fmt.Errorf("list reviews: %w", err)
	}
	var out []ReviewRequest
	if err := coll.Scan(ctx, "", func(_ string, r ReviewRequest) error {
		if status == "" || r.Status == status {
			out = append(out, r)
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("list reviews: %w", err)
	}
	slices.SortStableFunc(out, func(a, b ReviewRequest) int {
		return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

// GetReview returns the review request with the given id, or the one
// whose id starts with it (as git abbreviates commits). An id that
// matches nothing is store.ErrNotFound; a prefix of several ids is an
// error listing them.
func GetReview(ctx context.Context, st *store.Store, id string) (*ReviewRequest, error) {
	coll, err := reviews(st)
	if err != nil {
		return nil, fmt.Errorf("review %q: %w", id, err)
	}
	if id == "" {
		return nil, errors.New("review: empty id")
	}
	var found []ReviewRequest
	if err := coll.Scan(ctx, id, func(_ string, r ReviewRequest) error {
		found = append(found, r)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("review %q: %w", id, err)
	}
	for _, r := range found {
		if r.ID == id {
			return &r, nil
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("review %q: %w", id, store.ErrNotFound)
	case 1:
		return &found[0], nil
	}
	ids := make([]string, len(found))
	for i, r := range found {
		ids[i] = r.ID
	}
	return nil, fmt.Errorf("review %q: ambiguous id (matches %s)", id, strings.Join(ids, ", "))
}

// Approve approves the pending review request id (or a unique prefix) as
// by, at at, and promotes its candidate into dir as Promote does, with
// the decision in the promotion's evidence. It returns the decided
// request, whose Path is the strategy file written.
//
// Promotion comes first and is idempotent, so an approval interrupted
// before the request is marked can be repeated. If another candidate of
// the same version was promoted meanwhile, promotion fails (fs.ErrExist
// or store.ErrExists) and the request stays pending: reject it.
func Approve(ctx context.Context, st *store.Store, dir, id, by, note string, at time.Time) (*ReviewRequest, error) {
	r, err := pending(ctx, st, "approve", id, by, at)
	if err != nil {
		return nil, err
	}
	what := "approve review " + r.ID
	s, err := strategy.Parse("review "+r.ID, []byte(r.Candidate))
	if err != nil {
		return nil, fmt.Errorf("%s: candidate: %w", what, err)
	}
	if h := s.Hash(); h != r.Comparison.Candidate.Hash {
		return nil, fmt.Errorf("%s: the candidate (hash %s) is not the one that was compared (hash %s)", what, shortHash(h), shortHash(r.Comparison.Candidate.Hash))
	}
	d := &Decision{ID: r.ID, Status: string(ReviewApproved), By: by, At: at.UTC(), Note: note}
	path, err := promote(ctx, st, dir, s, r.Mutator, r.Comparison, r.Result, at, d)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	r.Path = path
	return decide(ctx, st, r, ReviewApproved, by, note, at)
}

// Reject rejects the pending review request id (or a unique prefix) as
// by, at at, with an optional note. Nothing is written but the decision.
func Reject(ctx context.Context, st *store.Store, id, by, note string, at time.Time) (*ReviewRequest, error) {
	r, err := pending(ctx, st, "reject", id, by, at)
	if err != nil {
		return nil, err
	}
	return decide(ctx, st, r, ReviewRejected, by, note, at)
}

// pending reads the request a decision is about and checks the decision
// can be made.
func pending(ctx context.Context, st *store.Store, verb, id, by string, at time.Time) (*ReviewRequest, error) {
	switch {
	case strings.TrimSpace(by) == "":
		return nil, fmt.Errorf("%s review %s: missing reviewer (by)", verb, id)
	case at.IsZero():
		return nil, fmt.Errorf("%s review %s: missing time (at)", verb, id)
	}
	r, err := GetReview(ctx, st, id)
	if err != nil {
		return nil, fmt.Errorf("%s %w", verb, err)
	}
	if r.Status != ReviewPending {
		return nil, fmt.Errorf("%s review %s: %w (%s by %s at %s)", verb, r.ID, ErrDecided, r.Status, r.By, r.Decided.Format(time.RFC3339))
	}
	return r, nil
}

func decide(ctx context.Context, st *store.Store, r *ReviewRequest, status ReviewStatus, by, note string, at time.Time) (*ReviewRequest, error) {
	r.Status, r.By, r.Note, r.Decided = status, by, note, at.UTC()
	coll, err := reviews(st)
	if err == nil {
		err = coll.Put(ctx, r.ID, *r)
	}
	if err != nil {
		return nil, fmt.Errorf("record review %s %s: %w", r.ID, status, err)
	}
	return r, nil
}
