package serve

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
)

// StrategySummary is one strategy as listed.
type StrategySummary struct {
	Name     string `json:"name"`
	Versions int    `json:"versions"`
	Latest   string `json:"latest"`
}

func (s *Server) listStrategies(r *http.Request) (int, any, error) {
	names, err := s.opts.Store.StrategyNames(r.Context())
	if err != nil {
		return 0, nil, err
	}
	out := []StrategySummary{}
	for _, n := range names {
		log, err := s.opts.Store.StrategyLog(r.Context(), n)
		if err != nil {
			return 0, nil, err
		}
		sum := StrategySummary{Name: n, Versions: len(log)}
		if len(log) > 0 {
			sum.Latest = log[len(log)-1].Version
		}
		out = append(out, sum)
	}
	return 200, map[string]any{"strategies": out}, nil
}

func (s *Server) getStrategy(r *http.Request) (int, any, error) {
	name := r.PathValue("name")
	log, err := s.opts.Store.StrategyLog(r.Context(), name)
	if err != nil {
		return 0, nil, err
	}
	if len(log) == 0 {
		return 0, nil, notFound("strategy %q has no recorded versions", name)
	}
	return 200, map[string]any{"name": name, "versions": log}, nil
}

// StrategyVersion is one recorded version and, when the server finds it
// beside one of its pipelines, the strategy file.
type StrategyVersion struct {
	store.StrategyRecord
	File string `json:"file,omitempty"`
	Text string `json:"text,omitempty"`
}

func (s *Server) getStrategyVersion(r *http.Request) (int, any, error) {
	rec, err := s.opts.Store.Strategy(r.Context(), r.PathValue("name"), r.PathValue("version"))
	if err != nil {
		return 0, nil, err
	}
	v := StrategyVersion{StrategyRecord: *rec}
	if f, _ := s.findStrategy(rec.Name, rec.Version, rec.Hash); f != nil {
		v.File, v.Text = f.path, string(f.text)
	}
	return 200, v, nil
}

type strategyFile struct {
	path string
	text []byte
	s    *strategy.Strategy
}

// findStrategy looks for the file of a strategy version in the strategy
// folders of the server's pipelines (where promotion writes them). A
// non-empty hash must match.
func (s *Server) findStrategy(name, version, hash string) (*strategyFile, error) {
	seen := map[string]bool{}
	for _, p := range s.pipelines {
		dir := filepath.Dir(p.Path(p.Strategy.File))
		if seen[dir] {
			continue
		}
		seen[dir] = true
		files, _ := filepath.Glob(filepath.Join(dir, "*.toml"))
		for _, f := range files {
			text, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			st, err := strategy.Parse(f, text)
			if err != nil || st.Metadata.Name != name || st.Metadata.Version != version {
				continue
			}
			if hash != "" && st.Hash() != hash {
				continue
			}
			return &strategyFile{path: f, text: text, s: st}, nil
		}
	}
	return nil, notFound("strategy %s %s: no file for it beside the server's pipelines", name, version)
}

// StrategyDiff is GET /api/v1/strategies/{name}/diff.
type StrategyDiff struct {
	Name string `json:"name"`
	From string `json:"from"`
	To   string `json:"to"`
	// Diff is the structured diff; Text the same as `sextant strategy diff`
	// prints it.
	Diff any    `json:"diff"`
	Text string `json:"text"`
}

func (s *Server) diffStrategy(r *http.Request) (int, any, error) {
	name := r.PathValue("name")
	from, to := r.URL.Query().Get("from"), r.URL.Query().Get("to")
	if from == "" || to == "" {
		return 0, nil, badRequest("from and to: name the two versions to compare")
	}
	files := make([]*strategyFile, 2)
	for i, v := range []string{from, to} {
		hash := ""
		if rec, err := s.opts.Store.Strategy(r.Context(), name, v); err == nil {
			hash = rec.Hash
		} else if !errors.Is(err, store.ErrNotFound) {
			return 0, nil, err
		}
		f, err := s.findStrategy(name, v, hash)
		if err != nil {
			return 0, nil, err
		}
		files[i] = f
	}
	ch := strategy.Diff(files[0].s, files[1].s)
	return 200, StrategyDiff{Name: name, From: from, To: to, Diff: ch.SDK(), Text: ch.String()}, nil
}

func (s *Server) listComparisons(r *http.Request) (int, any, error) {
	vs, err := evolve.ListVerdicts(r.Context(), s.opts.Store, r.URL.Query().Get("pipeline"))
	if err != nil {
		return 0, nil, err
	}
	if vs == nil {
		vs = []evolve.Verdict{}
	}
	return 200, map[string]any{"comparisons": vs}, nil
}

// ComparisonView is GET /api/v1/comparisons/{id}: the stored verdict and
// its forest plot, drawn by the HTML report's code (report.ForestSVG) so
// the dashboard and the report show one plot.
type ComparisonView struct {
	evolve.Verdict
	ForestSVG string `json:"forest_svg"`
}

func (s *Server) getComparison(r *http.Request) (int, any, error) {
	id := r.PathValue("id")
	v, err := evolve.GetVerdict(r.Context(), s.opts.Store, id)
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil, notFound("comparison %q not found", id)
	}
	if err != nil {
		return 0, nil, err
	}
	return 200, ComparisonView{Verdict: *v, ForestSVG: string(report.ForestSVG(v.Comparison.Metrics))}, nil
}

func (s *Server) saveComparison(r *http.Request) (int, any, error) {
	var v evolve.Verdict
	if err := decodeBody(r, &v); err != nil {
		return 0, nil, err
	}
	if v.Pipeline == "" || v.Comparison.Candidate.Hash == "" {
		return 0, nil, badRequest("a comparison needs a pipeline and a candidate")
	}
	if v.ID == "" {
		v.ID = s.opts.Store.NewID()
	}
	if strings.ContainsAny(v.ID, "/\x00") || len(v.ID) > 128 {
		return 0, nil, badRequest("id %q: use letters, digits and . _ - : +", v.ID)
	}
	if v.Created.IsZero() {
		v.Created = s.opts.Store.Now()
	}
	if _, err := evolve.GetVerdict(r.Context(), s.opts.Store, v.ID); err == nil {
		return 0, nil, &Error{Status: http.StatusConflict, Code: CodeConflict, Message: "comparison " + v.ID + " exists already"}
	}
	if err := evolve.SaveVerdict(r.Context(), s.opts.Store, &v); err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, v, nil
}

func (s *Server) listReviews(r *http.Request) (int, any, error) {
	var want evolve.ReviewStatus
	switch st := r.URL.Query().Get("status"); st {
	case "", "pending":
		want = evolve.ReviewPending
	case "all":
	case string(evolve.ReviewApproved), string(evolve.ReviewRejected), string(evolve.ReviewSuperseded):
		want = evolve.ReviewStatus(st)
	default:
		return 0, nil, badRequest("status: %q is not pending, approved, rejected, superseded or all", st)
	}
	rs, err := evolve.ListReviews(r.Context(), s.opts.Store, want)
	if err != nil {
		return 0, nil, err
	}
	out := make([]ReviewView, len(rs))
	for i, rv := range rs {
		out[i] = reviewView(rv)
	}
	return 200, map[string]any{"reviews": out}, nil
}

// ReviewView is a review request as GET /api/v1/reviews lists it: with
// the forest plot of its comparison (report.ForestSVG).
type ReviewView struct {
	evolve.ReviewRequest
	ForestSVG string `json:"forest_svg,omitempty"`
}

func reviewView(rv evolve.ReviewRequest) ReviewView {
	v := ReviewView{ReviewRequest: rv}
	if len(rv.Comparison.Metrics) > 0 {
		v.ForestSVG = string(report.ForestSVG(rv.Comparison.Metrics))
	}
	return v
}

func (s *Server) getReview(r *http.Request) (int, any, error) {
	rv, err := evolve.GetReview(r.Context(), s.opts.Store, r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	return 200, rv, nil
}

// Decision is the body of approve and reject.
type Decision struct {
	By   string `json:"by"`
	Note string `json:"note,omitempty"`
}

func (s *Server) decide(r *http.Request, approve bool) (int, any, error) {
	id := r.PathValue("id")
	var d Decision
	if err := decodeBody(r, &d); err != nil {
		return 0, nil, err
	}
	if strings.TrimSpace(d.By) == "" {
		return 0, nil, badRequest("by: say who decides")
	}
	if len(d.By) > 200 || len(d.Note) > 4096 {
		return 0, nil, badRequest("by or note too long")
	}
	now := s.opts.Clock().UTC().Truncate(1e9)
	if !approve {
		rv, err := evolve.Reject(r.Context(), s.opts.Store, id, d.By, d.Note, now)
		if err != nil {
			return 0, nil, err
		}
		return 200, rv, nil
	}
	rv, err := evolve.GetReview(r.Context(), s.opts.Store, id)
	if err != nil {
		return 0, nil, err
	}
	p, ok := s.pipelines[rv.Pipeline]
	if !ok {
		return 0, nil, &Error{Status: http.StatusConflict, Code: CodeConflict,
			Message: "review " + rv.ID + ": pipeline " + rv.Pipeline + " is not one of the server's (--pipelines), so it does not know where the strategy file goes; approve with sextant review approve --pipeline FILE"}
	}
	rv, _, err = evolve.ApproveLive(r.Context(), s.opts.Store, p, "", rv.ID, d.By, d.Note, now)
	if errors.Is(err, evolve.ErrStale) || errors.Is(err, evolve.ErrLiveMoved) {
		return 0, nil, &Error{Status: http.StatusConflict, Code: CodeConflict, Message: err.Error()}
	}
	if err != nil {
		return 0, nil, err
	}
	return 200, rv, nil
}

func (s *Server) approveReview(r *http.Request) (int, any, error) { return s.decide(r, true) }
func (s *Server) rejectReview(r *http.Request) (int, any, error)  { return s.decide(r, false) }
