package serve

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// The sink routes let processes that cannot open the store — Temporal
// workers on other machines (`sextant worker --store-url`) — write into it
// through the server that holds it: a provider call's recording as soon as
// it is answered (so a retried step is never billed twice), and a run
// driven on Temporal once it ended. They sit beside the API (not in its
// OpenAPI document: they are sextant's own plumbing), behind the same
// token.
const (
	// SinkRecordingRoute reads (GET …/{key}) and writes (PUT) recordings.
	SinkRecordingRoute = "/sink/v1/recordings/"
	// SinkRunRoute records a finished stepwise run (POST, a run.RunRecord).
	SinkRunRoute = "/sink/v1/runs"
	// SinkSpansRoute stages spans of a run still going (POST, a list of
	// store.Span; see store.StageSpans).
	SinkSpansRoute = "/sink/v1/spans"
	// SinkLiveRoute reads a pipeline's live strategy version (POST, a
	// LiveQuery), which a run beginning on a worker uses.
	SinkLiveRoute = "/sink/v1/live"
)

// LiveQuery is the body of POST /sink/v1/live: the pipeline as the
// worker has it configured (evolve.LiveNamed).
type LiveQuery struct {
	Pipeline   string             `json:"pipeline"`
	Configured evolve.LiveVersion `json:"configured"`
	Pinned     bool               `json:"pinned,omitempty"`
}

// SinkHandlers are the sink routes over s, for Options.Handlers.
func SinkHandlers(s *store.Store) map[string]http.Handler {
	return map[string]http.Handler{
		"GET " + SinkRecordingRoute + "{key}": sinkHandler(func(r *http.Request) (int, any, error) {
			rec, err := s.Recording(r.Context(), r.PathValue("key"))
			return http.StatusOK, rec, err
		}),
		"PUT " + SinkRecordingRoute + "{key}": sinkHandler(func(r *http.Request) (int, any, error) {
			var rec store.Recording
			if err := decodeBody(r, &rec); err != nil {
				return 0, nil, err
			}
			if rec.Hash != r.PathValue("key") {
				return 0, nil, badRequest("recording hash %q is not the path's %q", rec.Hash, r.PathValue("key"))
			}
			return http.StatusNoContent, nil, s.PutRecording(r.Context(), &rec)
		}),
		"POST " + SinkRunRoute: sinkHandler(func(r *http.Request) (int, any, error) {
			var rec run.RunRecord
			if err := decodeBody(r, &rec); err != nil {
				return 0, nil, err
			}
			return http.StatusNoContent, nil, run.RecordRun(r.Context(), s, &rec)
		}),
		"POST " + SinkLiveRoute: sinkHandler(func(r *http.Request) (int, any, error) {
			var q LiveQuery
			if err := decodeBody(r, &q); err != nil {
				return 0, nil, err
			}
			if q.Pipeline == "" || q.Configured.Hash == "" {
				return 0, nil, badRequest("pipeline and configured.hash: name the pipeline and its configured strategy version")
			}
			l, err := evolve.LiveNamed(r.Context(), s, q.Pipeline, q.Configured, q.Pinned)
			return http.StatusOK, l, err
		}),
		"POST " + SinkSpansRoute: sinkHandler(func(r *http.Request) (int, any, error) {
			var spans []store.Span
			if err := decodeBody(r, &spans); err != nil {
				return 0, nil, err
			}
			return http.StatusNoContent, nil, s.StageSpans(r.Context(), spans)
		}),
	}
}

// sinkHandler is a sink route. Registered on a Server (Options.Handlers),
// it reads its body charged to the server's decode budget as the API's
// routes do (chargedHandler); elsewhere, to none.
func sinkHandler(h handlerFunc) http.Handler { return sinkRoute{h: h} }

type sinkRoute struct {
	h   handlerFunc
	srv *Server
}

// chargedTo is sinkRoute on s's decode budget.
func (k sinkRoute) chargedTo(s *Server) http.Handler { return sinkRoute{h: k.h, srv: s} }

func (k sinkRoute) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// What the body charged is given back before the answer is written:
	// the route answers once it stored what it decoded.
	var c *charge
	if k.srv != nil && !safeMethod(r.Method) {
		r, c = k.srv.charged(r)
		defer c.release()
	}
	status, v, err := k.h(r)
	c.release()
	if err != nil {
		var e *Error
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &e):
		case errors.As(err, &mbe):
			e = &Error{Status: http.StatusRequestEntityTooLarge, Code: CodeTooLarge, Message: err.Error()}
		case errors.Is(err, store.ErrNotFound):
			e = &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: err.Error()}
		case errors.Is(err, store.ErrExists):
			e = &Error{Status: http.StatusConflict, Code: CodeConflict, Message: err.Error()}
		case errors.Is(err, store.ErrInvalid):
			e = &Error{Status: http.StatusBadRequest, Code: CodeBadRequest, Message: err.Error()}
		default:
			e = &Error{Status: http.StatusInternalServerError, Code: CodeInternal, Message: err.Error()}
		}
		WriteError(w, e)
		return
	}
	if status == http.StatusNoContent {
		w.WriteHeader(status)
		return
	}
	writeJSON(w, status, v)
}

// Sink is a client of a server's sink routes: a run.Recorder that also
// records finished stepwise runs and stages the spans of running ones.
type Sink struct {
	c   *Client
	red *store.Redactor
}

// NewSink returns a sink writing through the server at base (with token);
// red redacts requests before they are hashed, as the store's does (nil:
// the default patterns).
func NewSink(base, token string, red *store.Redactor) *Sink {
	if red == nil {
		red = store.DefaultRedactor()
	}
	return &Sink{c: NewClient(base, token), red: red}
}

// URL is the server's base URL.
func (k *Sink) URL() string { return k.c.URL() }

// Recording reads a recording (store.ErrNotFound when there is none).
func (k *Sink) Recording(ctx context.Context, key string) (*store.Recording, error) {
	var rec store.Recording
	if err := k.c.do(ctx, http.MethodGet, SinkRecordingRoute+url.PathEscape(key), nil, &rec); err != nil {
		return nil, err
	}
	return &rec, nil
}

// PutRecording writes a recording.
func (k *Sink) PutRecording(ctx context.Context, r *store.Recording) error {
	return k.c.do(ctx, http.MethodPut, SinkRecordingRoute+url.PathEscape(r.Hash), r, nil)
}

// Redactor is the redactor requests are hashed with.
func (k *Sink) Redactor() *store.Redactor { return k.red }

// RecordRun records a finished stepwise run (see run.RecordRun).
func (k *Sink) RecordRun(ctx context.Context, r *run.RunRecord) error {
	return k.c.do(ctx, http.MethodPost, SinkRunRoute, r, nil)
}

// StageSpans writes spans of a run still going (see store.StageSpans).
func (k *Sink) StageSpans(ctx context.Context, spans []store.Span) error {
	return k.c.do(ctx, http.MethodPost, SinkSpansRoute, spans, nil)
}

// Live reads a pipeline's live strategy version (evolve.LiveNamed).
func (k *Sink) Live(ctx context.Context, pipeline string, conf evolve.LiveVersion, pinned bool) (*evolve.Live, error) {
	var l evolve.Live
	if err := k.c.do(ctx, http.MethodPost, SinkLiveRoute, LiveQuery{Pipeline: pipeline, Configured: conf, Pinned: pinned}, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

var _ run.Recorder = (*Sink)(nil)
