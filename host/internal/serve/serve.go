// Package serve is `sextant serve`: an HTTP server that holds one store
// (its single writer) and serves the versioned JSON API /api/v1/… with its
// OpenAPI document, plus any extra handlers mounted by the caller (the
// recording proxy, OTLP ingest) behind the same middleware.
//
// It must not decide anything the run, store and evolve packages decide:
// every route parses and checks its input, calls one of their functions
// and writes the answer as JSON. It never opens plugins itself: the
// caller hands it Options.Prepare (the CLI's plugin registry).
//
// # Safety
//
// The server binds to loopback unless told otherwise; any other address
// needs a bearer token (Options.Token, from $SEXTANT_SERVE_TOKEN), which
// every API and extra route then requires. It answers only to Host names
// it serves (Options.AllowHosts), so a page that rebinds its own name to
// this address is refused, and it bounds connections per client and in
// all, and how long a client may stall (Options.Limits). State-changing
// requests from another site are refused (Sec-Fetch-Site, Origin), API
// writes must be JSON (which a cross-site form cannot send without a CORS
// preflight, and the server answers none), and request bodies are
// bounded. Bad input is a 400 with a JSON error and nothing written.
// Everything the API returns was redacted when it was stored.
package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sextant-dev/sextant/host/internal/jsonbound"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// TokenEnv is the environment variable the CLI reads the bearer token from.
const TokenEnv = "SEXTANT_SERVE_TOKEN"

// DefaultAddr is where `sextant serve` listens by default.
const DefaultAddr = "127.0.0.1:7777"

// DefaultMaxBody bounds a request body (Options.MaxBody).
const DefaultMaxBody = 8 << 20

// DecodeBudget bounds what the API requests being served hold decoded
// of their bodies together, as the proxy's decode budget does its
// calls': five bodies at the limits of bodyLimits, any number of small
// ones.
const DecodeBudget = 256 << 20

// MaxHeaderBytes bounds a request's line and headers: net/http's default
// (1 MiB) let each of the MaxConns connections make the server hold a
// megabyte of headers, where an SDK's request has a few hundred bytes
// and Node's own server refuses past 16 KiB. One past it is a 431.
const MaxHeaderBytes = 64 << 10

// Options configure a Server.
type Options struct {
	// Store is the store the server holds, opened for writing.
	Store *store.Store
	// Pipelines is a directory of pipelines the API may run: each
	// DIR/NAME/pipeline.toml and DIR/*.toml. Empty: none.
	Pipelines string
	// Prepare opens a pipeline file's plugins for a run (required to
	// start, resume or deliver to runs).
	Prepare func(ctx context.Context, path string) (*run.Prepared, error)
	// Addr is the address the server listens on; it decides whether a
	// token is required (any address but loopback).
	Addr string
	// Token, when set, is required as "Authorization: Bearer TOKEN" on
	// every API and extra route. It must be set for a non-loopback Addr.
	Token string
	// AllowHosts are the names, besides localhost, IP addresses and
	// Addr's host, that requests may carry in their Host header (and
	// browsers in Origin): the server's public name behind a proxy or in
	// a container network. Any other name is refused with 403, which
	// defeats DNS rebinding.
	AllowHosts []string
	// Limits bound connections and slow clients; zero fields take the
	// defaults.
	Limits Limits
	// Handlers are extra routes (http.ServeMux patterns, such as
	// "POST /v1/chat/completions"), mounted behind the same auth,
	// cross-site and size-limit middleware as the API.
	Handlers map[string]http.Handler
	// MaxBody bounds request bodies in bytes; 0 means DefaultMaxBody.
	MaxBody int64
	// Logger logs requests that fail on the server's side.
	Logger *slog.Logger
	// Clock stamps review decisions; default time.Now.
	Clock func() time.Time
	// Version is sextant's version, shown in the OpenAPI document.
	Version string
	// Cluster, when set, is where the runs go on that this server's
	// store lacks until they ended (serve --temporal).
	Cluster Cluster
}

// Server is the HTTP server over one store.
type Server struct {
	opts      Options
	hosts     hostPolicy
	mux       *http.ServeMux
	handler   http.Handler
	pipelines map[string]*pipeline.Pipeline // by name; File is absolute
	routes    []route
	// patterns are the mux patterns registered (API and extra routes).
	patterns []string
	// taskLocks serialises what changes one task's run (resume, send).
	taskLocks sync.Map // task id → *sync.Mutex
	// live holds the runs carried out now, by task id (live.go).
	live sync.Map // task id → *liveRun
	// bg tracks runs started without waiting, so Close can wait for them.
	bg sync.WaitGroup
	// bgSlots bounds the runs started without waiting (Limits.MaxRuns):
	// each holds a slot until it returns.
	bgSlots chan struct{}
	// starting holds the ids of the runs started here that have not
	// returned. A start claims its id before it answers, so a second start
	// of the same id is a 409 even before the first run stored its task.
	startingMu sync.Mutex
	starting   map[string]struct{}
	// beforeBackground, when set (tests), is called by a run started
	// without waiting before it does anything.
	beforeBackground func(id string)
	// decoded bounds what the requests being served hold decoded of
	// their bodies (decodeBody).
	decoded jsonbound.Budget
	// afterCharge, when set (tests), is called by decodeBody once it
	// charged a body's cost to decoded, before it decodes it.
	afterCharge func()
	bgCtx       context.Context
	cancel      context.CancelFunc
	// cursors seals the store's cursors of the task list: a cursor is
	// good for this server's life.
	cursors *Sealer
}

// New checks opts and returns a server. A non-loopback Addr without a
// token is refused.
func New(opts Options) (*Server, error) {
	if opts.Store == nil {
		return nil, errors.New("serve: no store")
	}
	if opts.Store.ReadOnly() {
		return nil, errors.New("serve: the store is open read-only")
	}
	if opts.Addr == "" {
		opts.Addr = DefaultAddr
	}
	store.RegisterSecret(opts.Token) // never stored, logged or served
	loop, err := Loopback(opts.Addr)
	if err != nil {
		return nil, err
	}
	if !loop && opts.Token == "" {
		return nil, fmt.Errorf("serve on %s: an address other than loopback needs a token: set %s (every API and proxy request must then send Authorization: Bearer TOKEN)", opts.Addr, TokenEnv)
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.Limits, err = opts.Limits.withDefaults(); err != nil {
		return nil, err
	}
	hosts, err := newHostPolicy(opts.Addr, opts.AllowHosts)
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, hosts: hosts, mux: http.NewServeMux(), pipelines: map[string]*pipeline.Pipeline{},
		bgSlots: make(chan struct{}, opts.Limits.MaxRuns), starting: map[string]struct{}{}, cursors: NewSealer()}
	s.decoded.Limit = DecodeBudget
	s.bgCtx, s.cancel = context.WithCancel(context.Background())
	if opts.Pipelines != "" {
		if err := s.loadPipelines(opts.Pipelines); err != nil {
			return nil, err
		}
	}
	s.routes = s.apiRoutes()
	for _, rt := range s.routes {
		s.handle(rt.Method+" "+rt.Path, s.api(rt))
	}
	extra := make([]string, 0, len(opts.Handlers))
	for p := range opts.Handlers {
		extra = append(extra, p)
	}
	sort.Strings(extra)
	for _, p := range extra {
		if strings.HasPrefix(patternPath(p), apiPrefix) {
			return nil, fmt.Errorf("serve: extra handler %q: %s is the API's", p, apiPrefix)
		}
		h := opts.Handlers[p]
		if ch, ok := h.(chargedHandler); ok {
			h = ch.chargedTo(s)
		}
		s.handle(p, h)
	}
	s.mux.Handle("/", dashboard())
	s.handler = s.middleware(s.mux)
	return s, nil
}

// chargedHandler is an extra route (the sink's) that reads its JSON body
// charged to the decode budget of the server it is registered on.
type chargedHandler interface {
	chargedTo(s *Server) http.Handler
}

func (s *Server) handle(pattern string, h http.Handler) {
	s.mux.Handle(pattern, h)
	s.patterns = append(s.patterns, pattern)
}

// Routes lists the patterns of the API and extra routes, as registered
// ("GET /api/v1/tasks/{id}"), sorted.
func (s *Server) Routes() []string {
	out := slices.Clone(s.patterns)
	sort.Strings(out)
	return out
}

// Handler is the server's whole HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Wait waits for the runs started without waiting (wait=false) to end
// or pause.
func (s *Server) Wait() { s.bg.Wait() }

// Close cancels the runs started without waiting and waits for them to
// stop.
func (s *Server) Close() {
	s.cancel()
	s.bg.Wait()
}

// Serve serves on l until ctx is done, then shuts down gracefully. The
// connections it accepts are held to Options.Limits.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	lim := s.opts.Limits
	// ReadTimeout is not http.Server's: that one would also cancel the
	// context of a handler still running when it passes. The middleware
	// bounds the body instead (bodyDeadline).
	hs := &http.Server{Handler: s.handler, ReadHeaderTimeout: lim.ReadHeaderTimeout, IdleTimeout: lim.IdleTimeout,
		MaxHeaderBytes: MaxHeaderBytes, ErrorLog: slog.NewLogLogger(s.opts.Logger.Handler(), slog.LevelWarn)}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(newLimitListener(l, lim, s.opts.Logger)) }()
	select {
	case err := <-done:
		s.Close()
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := hs.Shutdown(sctx)
	// Runs started without waiting get the rest of the grace period to
	// end or pause; a run cancelled after it is recorded failed.
	drained := make(chan struct{})
	go func() { s.bg.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-sctx.Done():
	}
	s.Close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// Loopback reports whether addr (host:port) listens on loopback only:
// localhost or a loopback IP. An empty host means every interface.
func Loopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("serve: address %q: %w", addr, err)
	}
	if strings.EqualFold(host, "localhost") {
		return true, nil
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback(), nil
}

// loadPipelines indexes the pipelines under dir by name.
func (s *Server) loadPipelines(dir string) error {
	found, err := DiscoverPipelines(dir)
	if err != nil {
		return err
	}
	for _, f := range found.Skipped {
		s.opts.Logger.Debug("--pipelines: " + f)
	}
	for _, p := range found.Pipelines {
		s.pipelines[p.Name] = p
	}
	return nil
}

// patternPath is the path of a ServeMux pattern ("POST /v1/x" → "/v1/x").
func patternPath(p string) string {
	if i := strings.IndexByte(p, ' '); i >= 0 {
		p = strings.TrimSpace(p[i+1:])
	}
	if i := strings.IndexByte(p, '/'); i > 0 { // a host
		p = p[i:]
	}
	return p
}

// lockTask serialises changes to one task's run.
func (s *Server) lockTask(id string) func() {
	m, _ := s.taskLocks.LoadOrStore(id, new(sync.Mutex))
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}
