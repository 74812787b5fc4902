package serve

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/jsonbound"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

const apiPrefix = "/api/"

// Error is the body of every error answer: {"error": {"code", "message"}}.
type Error struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	// RetryAfter, when not 0, is the Retry-After header's seconds: when
	// a request refused for now (503) is worth sending again.
	RetryAfter int `json:"-"`
	// Close, when set, closes the connection after the answer: the
	// request's body is left unread.
	Close bool `json:"-"`
}

// retryUnavailable is the Retry-After of a 503 for want of a worker:
// about a worker's restart. The refusal changed nothing, so sending the
// request again is safe; sooner would mostly meet the same refusal.
const retryUnavailable = 5

// retryRuns is the Retry-After of a 503 for want of a run slot
// (Limits.MaxRuns): runs take seconds to minutes, and the refusal
// started nothing, so sending the request again is safe.
const retryRuns = 10

func (e *Error) Error() string { return e.Message }

// The error codes of the API.
const (
	CodeBadRequest   = "bad_request"
	CodeUnauthorized = "unauthorized"
	CodeForbidden    = "forbidden"
	CodeNotFound     = "not_found"
	CodeConflict     = "conflict"
	CodeTooLarge     = "too_large"
	CodeTimeout      = "timeout"
	CodeUnsupported  = "unsupported_media_type"
	CodeInternal     = "internal"
	// CodeUnavailable: what the request needs cannot answer now (serve
	// --temporal: no worker polls the run's task queue; --max-runs runs
	// started with wait=false go on already); try again later.
	CodeUnavailable = "unavailable"
)

func badRequest(format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: CodeBadRequest, Message: fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) *Error {
	return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: fmt.Sprintf(format, args...)}
}

// WriteError writes err as the API's JSON error. Handlers mounted through
// Options.Handlers may use it for the same shape.
func WriteError(w http.ResponseWriter, err *Error) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if err.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(err.RetryAfter))
	}
	if err.Close {
		w.Header().Set("Connection", "close")
	}
	w.WriteHeader(err.Status)
	_ = json.NewEncoder(w).Encode(struct {
		Error *Error `json:"error"`
	}{err})
}

// writeJSON writes v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		WriteError(w, &Error{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "encode answer: " + err.Error()})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// middleware wraps every route: Host and Origin check, body deadline,
// auth, cross-site refusal, body limit. The dashboard's static files need
// no token (they hold no data; the page sends the token with its API
// calls). A refused client's connection is not kept alive.
func (s *Server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.checkHost(r); err != nil {
			w.Header().Set("Connection", "close")
			WriteError(w, err)
			return
		}
		bodyDeadline(w, r, s.opts.Limits.ReadTimeout)
		static := !strings.HasPrefix(r.URL.Path, apiPrefix) && isDashboardPath(r.URL.Path)
		if s.opts.Token != "" && !static && !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="sextant"`)
			w.Header().Set("Connection", "close")
			if h, _ := s.mux.Handler(r); h != nil {
				if u, ok := h.(Unauthorizer); ok {
					u.WriteUnauthorized(w, r, "missing or wrong token: send $"+TokenEnv+" as the API key (Authorization: Bearer TOKEN, or x-api-key: TOKEN)")
					return
				}
			}
			WriteError(w, &Error{Status: http.StatusUnauthorized, Code: CodeUnauthorized,
				Message: "missing or wrong bearer token (send Authorization: Bearer $" + TokenEnv + ")"})
			return
		}
		if !safeMethod(r.Method) {
			if err := checkSameSite(r); err != nil {
				WriteError(w, err)
				return
			}
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBody)
		}
		next.ServeHTTP(w, r)
	})
}

// Unauthorizer is implemented by an extra route (Options.Handlers) whose
// clients expect their own error shape, such as the recording proxy's
// OpenAI and Anthropic routes: the server has it write the 401 of a
// request without the token instead of writing the API's JSON error.
type Unauthorizer interface {
	WriteUnauthorized(w http.ResponseWriter, r *http.Request, msg string)
}

// authorized reports whether r carries the token: as "Authorization:
// Bearer TOKEN" (the API, OpenAI clients, OTLP exporters given the
// header) or as "x-api-key: TOKEN" (Anthropic clients).
func (s *Server) authorized(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		// OpenAI and Anthropic clients send their key in these headers;
		// the proxy accepts the server token there too.
		if tok = r.Header.Get("X-Api-Key"); tok == "" {
			return false
		}
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(s.opts.Token)) == 1
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// checkSameSite refuses a state-changing request a browser made for
// another site: by Sec-Fetch-Site (every current browser sends it), else
// by an Origin that is not this host. Non-browser clients send neither.
func checkSameSite(r *http.Request) *Error {
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "same-origin", "none":
	default:
		return &Error{Status: http.StatusForbidden, Code: CodeForbidden, Message: "cross-site request refused (Sec-Fetch-Site: " + site + ")"}
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return &Error{Status: http.StatusForbidden, Code: CodeForbidden, Message: "cross-site request refused (Origin " + o + " is not " + r.Host + ")"}
		}
	}
	return nil
}

// handlerFunc is an API handler: it returns the status and value to
// write, or an error.
type handlerFunc func(r *http.Request) (int, any, error)

// api adapts an API handler: JSON bodies only on writes, errors mapped to
// status codes.
func (s *Server) api(rt route) http.Handler {
	known := map[string]bool{}
	for _, q := range rt.Query {
		known[q.Name] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, vs := range r.URL.Query() {
			if !known[k] {
				WriteError(w, badRequest("unknown query parameter %q", k))
				return
			}
			// Every parameter takes one value: a second one would be
			// dropped unseen, as if ?status=a&status=b asked for both.
			if len(vs) > 1 {
				WriteError(w, badRequest("query parameter %q is given %d times: it takes one value", k, len(vs)))
				return
			}
		}
		if r.Method == http.MethodPost {
			// Neither type is one a cross-site form can send without a
			// CORS preflight (which the server never answers).
			want := rt.BodyType
			if want == "" {
				want = "application/json"
			}
			mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
			if mt != want {
				WriteError(w, &Error{Status: http.StatusUnsupportedMediaType, Code: CodeUnsupported,
					Message: "send the request body as Content-Type: " + want})
				return
			}
		}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.opts.Logger.Error("api handler panicked", "method", r.Method, "path", r.URL.Path, "panic", p)
				WriteError(w, &Error{Status: http.StatusInternalServerError, Code: CodeInternal, Message: fmt.Sprintf("internal error: %v", p)})
			}
		}()
		// What the body read charged is given back before the answer is
		// written, and on a panic.
		var c *charge
		if r.Method == http.MethodPost {
			r, c = s.charged(r)
			defer c.release()
		}
		status, v, err := rt.handle(r)
		c.release()
		if err != nil {
			e := s.toError(r, err)
			WriteError(w, e)
			return
		}
		writeJSON(w, status, v)
	})
}

// toError maps an error from the packages below to an API error.
func (s *Server) toError(r *http.Request, err error) *Error {
	var e *Error
	var mbe *http.MaxBytesError
	var le *store.LockedError
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &mbe):
		return &Error{Status: http.StatusRequestEntityTooLarge, Code: CodeTooLarge, Message: fmt.Sprintf("request body larger than %d bytes", mbe.Limit)}
	case errors.Is(err, store.ErrNotFound):
		return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: err.Error()}
	case errors.Is(err, store.ErrExists), errors.Is(err, evolve.ErrDecided), errors.As(err, &le):
		return &Error{Status: http.StatusConflict, Code: CodeConflict, Message: err.Error()}
	case errors.Is(err, run.ErrNoWaiter), errors.Is(err, sdk.ErrInvalid), errors.Is(err, store.ErrBadCursor), errors.Is(err, store.ErrInvalid):
		return &Error{Status: http.StatusBadRequest, Code: CodeBadRequest, Message: err.Error()}
	case errors.Is(err, sdk.ErrUnavailable):
		return &Error{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: err.Error(), RetryAfter: retryUnavailable}
	case errors.Is(err, os.ErrDeadlineExceeded):
		return &Error{Status: http.StatusRequestTimeout, Code: CodeTimeout, Message: err.Error()}
	case errors.Is(err, context.Canceled):
		return &Error{Status: 499, Code: "canceled", Message: err.Error()}
	}
	s.opts.Logger.Error("api request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	return &Error{Status: http.StatusInternalServerError, Code: CodeInternal, Message: err.Error()}
}

// boundBody refuses a body b past bodyLimits (413, positioned), then
// charges c (when not nil) its decoded cost in place of the held bytes
// its read charged (503 with Retry-After when the budget is spent:
// refused, not queued).
func boundBody(b []byte, c *charge, held int64) error {
	shape, err := jsonbound.Scan(b, bodyLimits)
	if err != nil {
		return &Error{Status: http.StatusRequestEntityTooLarge, Code: CodeTooLarge, Message: "request body: " + err.Error()}
	}
	if c == nil {
		return nil
	}
	// The buffer's spare capacity stays held until the request ends.
	cost := shape.Cost(len(b)) + int64(cap(b)-len(b))
	if !c.srv.decoded.Grow(c.held, c.held-held+cost) {
		return errBusy(false)
	}
	c.held += cost - held
	if c.srv.afterCharge != nil {
		c.srv.afterCharge()
	}
	return nil
}

// errBusy is a body the decode budget refused; unread when it was
// refused before it was read.
func errBusy(unread bool) *Error {
	return &Error{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, RetryAfter: retryUnavailable, Close: unread,
		Message: "the server holds as many large request bodies as it may at once: send this one again shortly"}
}

// bodyLimits bound what a request body holds once decoded: at most one
// value per 16 bytes of DefaultMaxBody (a body at the cap then holds
// about six times its bytes decoded, not forty), nested at most 128
// deep. A background run keeps its input decoded until it ends (RATIONALE
// "Why OTLP ingest and the proxy bound what a body takes decoded, refuse
// rather than queue, and check usage").
var bodyLimits = jsonbound.Limits{Values: DefaultMaxBody / 16, Depth: 128}

// charge is what a request holds charged to its server's decode budget:
// its body's bytes as they are read, then what they hold decoded. It is
// given back when its handler returns, before the answer is written.
type charge struct {
	srv  *Server
	held int64
}

// chargeKey is the context key of a request's *charge.
type chargeKey struct{}

// charged returns r carrying a charge to s's decode budget, and the
// charge.
func (s *Server) charged(r *http.Request) (*http.Request, *charge) {
	c := &charge{srv: s}
	return r.WithContext(context.WithValue(r.Context(), chargeKey{}, c)), c
}

// release gives back what c holds; a nil c holds nothing.
func (c *charge) release() {
	if c != nil {
		c.srv.decoded.Give(c.held)
		c.held = 0
	}
}

// readBody reads r's body, charged as it is read to the budget of the
// charge r carries (jsonbound.Budget.Read: charged as its bytes come,
// never what its length announces, an empty body nothing; 503 past the
// budget), and returns it with its charge (nil when r carries none) and
// what the read charged.
func readBody(r *http.Request) ([]byte, *charge, int64, error) {
	c, _ := r.Context().Value(chargeKey{}).(*charge)
	if c == nil {
		b, err := io.ReadAll(r.Body)
		return b, nil, 0, err
	}
	b, held, err := c.srv.decoded.Read(r.Body, r.ContentLength, c.srv.opts.MaxBody)
	c.held += held
	if errors.Is(err, jsonbound.ErrBusy) {
		return nil, c, held, errBusy(true)
	}
	return b, c, held, err // *http.MaxBytesError → 413
}

// decodeBody reads a JSON request body into v: one object, no unknown
// fields, read by readBody and bounded by boundBody before it is decoded.
// An empty body is an empty object, charged nothing: a cancel with no
// body is served with the budget spent.
func decodeBody(r *http.Request, v any) error {
	b, c, held, err := readBody(r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		b = []byte("{}")
	} else if err := boundBody(b, c, held); err != nil {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return badRequest("request body: %v", err)
	}
	if d.More() {
		return badRequest("request body: more than one JSON value")
	}
	return nil
}
