package run

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// Provider is one named provider of a pipeline ([providers.NAME]) with the
// plugin that serves it.
type Provider struct {
	Name   string
	Plugin sdk.Provider
	// Config is passed to the plugin with every request. It holds no
	// secret: Prepare binds the API key to the plugin (see bindProvider).
	Config      map[string]any
	Model       string
	Temperature *float64
	MaxTokens   int
	Timeout     time.Duration // per call; 0 = 60s
	Retries     int           // retries after the first attempt
	// Fallback names the providers to try, in order, when this one fails;
	// their own fallbacks follow them.
	Fallback []string
	// Breaker says when this provider's circuit opens; the zero value is
	// the default (5 consecutive failures, 30s cool-down).
	Breaker Breaker
	// System is the well-known name of the provider behind the block
	// (the plugin's name: "openai", "anthropic"), reported as
	// gen_ai.provider.name; "" means the plugin's Describe name.
	System string
	// BaseURL is where the plugin sends requests (the block's base_url,
	// else the plugin's declared default), reported as server.address
	// and server.port; "" when the plugin has none.
	BaseURL string
}

const (
	defaultTimeout = 60 * time.Second
	// maxRetryAfter caps the wait a provider may ask for: a run does not
	// stall for an hour because an upstream said so.
	maxRetryAfter = 60 * time.Second
	// maxBackoff caps the exponential backoff.
	maxBackoff = 30 * time.Second
)

// Providers routes chat requests through a provider and its fallbacks,
// retrying what is worth retrying and failing fast on a provider whose
// circuit is open. It is safe for concurrent use.
type Providers struct {
	byName   map[string]*Provider
	breakers map[string]*breaker
	logger   *slog.Logger
	// sleep waits between retries; tests replace it.
	sleep func(context.Context, time.Duration) error
	// now is the breaker's and the deadline check's clock; tests replace it.
	now func() time.Time
	// jitter returns a random duration in [0, d]; tests replace it.
	jitter func(d time.Duration) time.Duration
	// BaseBackoff is the first retry delay (doubled per attempt, with jitter).
	BaseBackoff time.Duration
	// plugins caches the name each provider's plugin describes itself
	// by (pluginName): Describe builds its whole Info every time.
	plugins sync.Map // *Provider → string
}

// pluginName is the name p's plugin describes itself by.
func (r *Providers) pluginName(p *Provider) string {
	if n, ok := r.plugins.Load(p); ok {
		return n.(string)
	}
	n := p.Plugin.Describe().Name
	r.plugins.Store(p, n)
	return n
}

// NewProviders returns a provider router over ps.
func NewProviders(logger *slog.Logger, ps ...*Provider) *Providers {
	if logger == nil {
		logger = slog.Default()
	}
	r := &Providers{
		byName:      map[string]*Provider{},
		breakers:    map[string]*breaker{},
		logger:      logger,
		sleep:       sleepCtx,
		now:         time.Now,
		jitter:      randomJitter,
		BaseBackoff: 500 * time.Millisecond,
	}
	for _, p := range ps {
		r.byName[p.Name] = p
		r.breakers[p.Name] = newBreaker(p.Name, p.Breaker)
	}
	return r
}

// Get returns the provider called name.
func (r *Providers) Get(name string) (*Provider, bool) {
	p, ok := r.byName[name]
	return p, ok
}

// Attempt is one provider call made for a request.
type Attempt struct {
	Provider string
	Latency  time.Duration
	Err      error
}

// Chat sends req through the provider called name, then its fallbacks in
// order (each fallback's own fallbacks after it, each provider once). It
// returns the answer, the provider that gave it and every call made; a
// call refused by an open circuit is not one.
//
// # Notes
//
//   - Every failure falls back, not only retryable ones: a request one
//     provider rejects (bad request, credentials) may suit the next.
//   - When every provider failed the error has one clause per provider
//     and matches (errors.Is) each provider's error.
func (r *Providers) Chat(ctx context.Context, name string, req *sdk.ChatRequest) (*sdk.ChatResponse, string, []Attempt, error) {
	return r.route(ctx, name, req, chatOnce, nil, nil)
}

// chatInto is Chat appending the calls it makes to attempts: a caller
// that drops them passes an array of its own, and nothing is allocated.
// The first attempt is made in room unless it is nil (see try).
func (r *Providers) chatInto(ctx context.Context, name string, req *sdk.ChatRequest, attempts []Attempt, room *callFrame) (*sdk.ChatResponse, string, []Attempt, error) {
	return r.route(ctx, name, req, chatOnce, attempts, room)
}

// callFunc makes one attempt of a request at a provider.
type callFunc func(ctx context.Context, p *Provider, req *sdk.ChatRequest) (*sdk.ChatResponse, error)

func chatOnce(ctx context.Context, p *Provider, req *sdk.ChatRequest) (*sdk.ChatResponse, error) {
	return p.Plugin.Chat(ctx, req)
}

// route sends req through the chain of name, each attempt made by call,
// the first in room unless it is nil (see try).
func (r *Providers) route(ctx context.Context, name string, req *sdk.ChatRequest, call callFunc, attempts []Attempt, room *callFrame) (*sdk.ChatResponse, string, []Attempt, error) {
	if _, ok := r.byName[name]; !ok {
		return nil, "", nil, fmt.Errorf("unknown provider %q", name)
	}
	var chain []string
	if p := r.byName[name]; len(p.Fallback) == 0 {
		var one [1]string // the common chain of one, without allocating it
		one[0] = name
		chain = one[:]
	} else {
		chain = r.chain(name)
	}
	var errs []error
	for i, n := range chain {
		var err error
		if p, ok := r.byName[n]; !ok {
			err = fmt.Errorf("provider %q: unknown provider", n)
		} else {
			var resp *sdk.ChatResponse
			resp, attempts, err = r.try(ctx, p, req, call, attempts, room)
			room = nil // used once
			if err == nil {
				return resp, n, attempts, nil
			}
		}
		errs = append(errs, err)
		if ctx.Err() != nil || errors.Is(err, errStreamStarted) {
			break
		}
		if i+1 < len(chain) {
			r.logger.Warn("provider failed; falling back", "provider", n, "next", chain[i+1],
				"code", string(errCode(err)), "reason", err.Error())
		}
	}
	if len(errs) == 1 {
		return nil, "", attempts, errs[0]
	}
	return nil, "", attempts, &chainError{errs: errs, all: len(errs) == len(chain)}
}

// chain is name followed by its fallbacks, depth first, each name once.
func (r *Providers) chain(name string) []string {
	var out []string
	seen := map[string]bool{}
	var walk func(string)
	walk = func(n string) {
		if seen[n] {
			return
		}
		seen[n] = true
		out = append(out, n)
		if p, ok := r.byName[n]; ok {
			for _, fb := range p.Fallback {
				walk(fb)
			}
		}
	}
	walk(name)
	return out
}

// try sends req to p, retrying as p allows; it appends the calls it made
// to attempts, and returns them. The request and the first try's context
// go in room, a callFrame nothing has used (the caller's, such as a
// step's frame: it is used once and never again, since a plugin may read
// a call's context after the call), or in one allocation when room is
// nil.
func (r *Providers) try(ctx context.Context, p *Provider, in *sdk.ChatRequest, call callFunc, attempts []Attempt, room *callFrame) (*sdk.ChatResponse, []Attempt, error) {
	first := len(attempts)
	cf := room
	if cf == nil {
		cf = new(callFrame)
	}
	cf.req, cf.ctx = *in, lazyCtx{} // not attrs, which chatIn may have taken
	req := &cf.req
	if req.Model == "" {
		req.Model = p.Model
	}
	if req.Temperature == nil {
		req.Temperature = p.Temperature
	}
	if req.MaxTokens == 0 {
		req.MaxTokens = p.MaxTokens
	}
	req.Config = p.Config
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	retries := max(p.Retries, 0)
	b := r.breakers[p.Name]
	if b == nil { // a Provider added to byName by hand
		b = newBreaker(p.Name, Breaker{Failures: -1})
	}
	var last error
	for n := 0; n <= retries; n++ {
		probe, err := b.allow(r.now())
		if err != nil {
			if last == nil {
				return nil, attempts, err
			}
			break // opened by a concurrent call while this one waited
		}
		start := time.Now()
		callCtx := &cf.ctx
		if n == 0 {
			cf.ctx = lazyCtx{parent: ctx, deadline: start.Add(timeout)}
		} else {
			callCtx = newLazyCtx(ctx, start.Add(timeout))
		}
		resp, err := call(callCtx, p, req)
		// The call's own deadline passed, not the caller's: a timeout,
		// whatever error the plugin made of it.
		timedOut := errors.Is(callCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
		callCtx.cancel()
		if err != nil && timedOut {
			te := &sdk.Error{Code: sdk.CodeTimeout, Message: fmt.Sprintf("no answer within %s", timeout)}
			if errors.Is(err, errStreamStarted) {
				err = &StreamBrokenError{Err: te}
			} else {
				err = te
			}
		}
		// The transport's own deadline passed: the plugin ran past its
		// wall-time limit (a loop, a hang) and was stopped. That is the
		// plugin's fault, not the upstream's: another try would burn the
		// same limit again, so it is not retried (it still falls back).
		pluginDeadline := err != nil && !timedOut && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded)
		attempts = append(attempts, Attempt{Provider: p.Name, Latency: time.Since(start), Err: err})
		o := classify(err)
		if ctx.Err() != nil {
			o = neutral // the caller gave up; the endpoint may be fine
		}
		opened := b.done(r.now(), o, probe)
		if opened {
			r.logger.Warn("provider circuit open", "provider", p.Name, "failures", b.failuresNow(),
				"cooldown", b.cooldown, "reason", err.Error())
		}
		if err == nil {
			return resp, attempts, nil
		}
		last = err
		if opened || ctx.Err() != nil || pluginDeadline || !retryable(err) || n == retries || errors.Is(err, errStreamStarted) {
			break
		}
		// A wait (or a Retry-After, even one above the cap) that ends past
		// the caller's deadline is hopeless: give up now with the error.
		dl, hasDeadline := ctx.Deadline()
		if hasDeadline && retryAfter(err) > dl.Sub(r.now()) {
			r.logger.Debug("provider retry-after passes the deadline; giving up", "provider", p.Name,
				"retry_after", retryAfter(err), "left", dl.Sub(r.now()))
			break
		}
		wait := r.backoff(p.Name, n, err)
		if hasDeadline && wait > dl.Sub(r.now()) {
			r.logger.Debug("provider backoff passes the deadline; giving up", "provider", p.Name,
				"wait", wait, "left", dl.Sub(r.now()))
			break
		}
		r.logger.Debug("provider call failed; retrying", "provider", p.Name, "attempt", n+1, "wait", wait, "reason", err.Error())
		if err := r.sleep(ctx, wait); err != nil {
			break
		}
	}
	return nil, attempts, &ProviderError{Provider: p.Name, Plugin: r.pluginName(p), Attempts: len(attempts) - first, Err: last}
}

// callFrame is a provider call's request and its first try's context,
// and room for its span's attributes (see callRoom).
type callFrame struct {
	req sdk.ChatRequest
	ctx lazyCtx
	// attrs are the call's span's attributes, once taken.
	attrs      store.CallAttributes
	attrsTaken bool
}

// callRoom is where a call's span attributes go: f's room the first time
// (a step's frame holds its first call's, with no allocation of their
// own), else a new one.
func callRoom(f *callFrame) *store.CallAttributes {
	if f == nil || f.attrsTaken {
		return new(store.CallAttributes)
	}
	f.attrsTaken = true
	return &f.attrs
}

// retryable: rate limits, upstream timeouts and unavailable upstreams are
// worth another try; auth, bad requests, invalid input, plugin faults
// (trap, exit, out of memory) and a plugin's own deadline are not.
func retryable(err error) bool {
	return errors.Is(err, sdk.ErrRateLimited) || errors.Is(err, sdk.ErrUnavailable) || errors.Is(err, sdk.ErrTimeout)
}

// backoff is exponential (capped) with jitter on the upper half, and never
// shorter than a Retry-After the provider sent, which is itself capped at
// maxRetryAfter.
func (r *Providers) backoff(provider string, n int, err error) time.Duration {
	d := maxBackoff
	if n < 30 && r.BaseBackoff<<n < maxBackoff {
		d = r.BaseBackoff << n
	}
	d = d/2 + r.jitter(d/2)
	if ra := retryAfter(err); ra > d {
		d = ra
		if d > maxRetryAfter {
			r.logger.Warn("provider retry-after above the cap; waiting the cap", "provider", provider,
				"retry_after", ra, "cap", maxRetryAfter)
			d = maxRetryAfter
		}
	}
	return d
}

func retryAfter(err error) time.Duration {
	var e *sdk.Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}

func randomJitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(d) + 1))
}

// ProviderError is how one provider failed a request after its retries:
// it renders as `provider "default" (plugin "openai"): rate limited after
// 4 attempts (retry-after 20s): slow down` and unwraps to the last
// attempt's error.
type ProviderError struct {
	// Provider is the pipeline's name for the provider ([providers.NAME]).
	Provider string
	// Plugin is the name of the plugin that serves it ("" if unknown).
	Plugin   string
	Attempts int
	Err      error
}

func (e *ProviderError) Error() string {
	what := "failed"
	var se *sdk.Error
	if errors.As(e.Err, &se) {
		switch se.Code {
		case sdk.CodeRateLimited:
			what = "rate limited"
		case sdk.CodeTimeout:
			what = "timed out"
		case sdk.CodeUnavailable:
			what = "unavailable"
		case sdk.CodeAuth:
			what = "refused the credentials"
		case sdk.CodeBadRequest, sdk.CodeInvalid:
			what = "rejected the request"
		case sdk.CodeUnknownMethod:
			what = "does not answer chat requests"
		}
	}
	tries := "1 attempt"
	if e.Attempts != 1 {
		tries = fmt.Sprintf("%d attempts", e.Attempts)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "provider %q", e.Provider)
	if e.Plugin != "" {
		fmt.Fprintf(&b, " (plugin %q)", e.Plugin)
	}
	fmt.Fprintf(&b, ": %s after %s", what, tries)
	if se != nil && se.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry-after %s)", se.RetryAfter)
	}
	if msg := errMessage(e.Err, e.Plugin); msg != "" {
		b.WriteString(": ")
		b.WriteString(msg)
	}
	return b.String()
}

func (e *ProviderError) Unwrap() error { return e.Err }

// errMessage is the error's text without what the ProviderError already
// shows: the plugin's name and the retry-after.
func errMessage(err error, plugin string) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	var e *sdk.Error
	if errors.As(err, &e) && e.Code == sdk.CodeRateLimited && e.RetryAfter > 0 {
		msg = strings.TrimSuffix(msg, fmt.Sprintf(" (retry-after %s)", e.RetryAfter))
	}
	if plugin != "" {
		msg = strings.TrimPrefix(msg, fmt.Sprintf("plugin %q: ", plugin))
	}
	return msg
}

func errCode(err error) sdk.Code {
	var e *sdk.Error
	switch {
	case errors.Is(err, ErrCircuitOpen):
		return sdk.CodeUnavailable
	case errors.As(err, &e):
		return e.Code
	}
	return sdk.CodeInternal
}

// chainError is the failure of a whole chain: one clause per provider.
type chainError struct {
	errs []error
	all  bool // every provider of the chain was tried
}

func (e *chainError) Error() string {
	msgs := make([]string, len(e.errs))
	for i, err := range e.errs {
		msgs[i] = err.Error()
	}
	prefix := ""
	if e.all {
		prefix = fmt.Sprintf("all %d providers failed: ", len(e.errs))
	}
	return prefix + strings.Join(msgs, "; ")
}

func (e *chainError) Unwrap() []error { return e.errs }

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
