package run

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/sextant-dev/sextant/sdk"
)

// Provider is one named provider of a pipeline ([providers.NAME]) with the
// plugin that serves it.
type Provider struct {
	Name   string
	Plugin sdk.Provider
	// Config is passed to the plugin with every request (never secrets in
	// files; the host adds what api_key_env names).
	Config      map[string]any
	Model       string
	Temperature *float64
	MaxTokens   int
	Timeout     time.Duration // per call; 0 = 60s
	Retries     int           // retries after the first attempt
	Fallback    []string
}

// Providers routes chat requests through a provider and its fallbacks,
// retrying what is worth retrying.
type Providers struct {
	byName map[string]*Provider
	logger *slog.Logger
	// sleep waits between retries; tests replace it.
	sleep func(context.Context, time.Duration) error
	// BaseBackoff is the first retry delay (doubled per attempt, with jitter).
	BaseBackoff time.Duration
}

// NewProviders returns a provider router over ps.
func NewProviders(logger *slog.Logger, ps ...*Provider) *Providers {
	if logger == nil {
		logger = slog.Default()
	}
	r := &Providers{byName: map[string]*Provider{}, logger: logger, sleep: sleepCtx, BaseBackoff: 500 * time.Millisecond}
	for _, p := range ps {
		r.byName[p.Name] = p
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
// order. It returns the answer, the provider that gave it and every attempt.
func (r *Providers) Chat(ctx context.Context, name string, req *sdk.ChatRequest) (*sdk.ChatResponse, string, []Attempt, error) {
	p, ok := r.byName[name]
	if !ok {
		return nil, "", nil, fmt.Errorf("unknown provider %q", name)
	}
	var attempts []Attempt
	chain := append([]string{name}, p.Fallback...)
	var errs []error
	for i, n := range chain {
		pr, ok := r.byName[n]
		if !ok {
			continue
		}
		resp, tries, err := r.try(ctx, pr, req)
		attempts = append(attempts, tries...)
		if err == nil {
			return resp, n, attempts, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
		if i+1 < len(chain) {
			r.logger.Warn("provider failed; falling back", "provider", n, "next", chain[i+1], "reason", err)
		}
	}
	return nil, "", attempts, errors.Join(errs...)
}

func (r *Providers) try(ctx context.Context, p *Provider, in *sdk.ChatRequest) (*sdk.ChatResponse, []Attempt, error) {
	req := *in
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
		timeout = 60 * time.Second
	}
	var attempts []Attempt
	var last error
	for n := 0; n <= p.Retries; n++ {
		callCtx, cancel := context.WithTimeout(ctx, timeout)
		start := time.Now()
		resp, err := p.Plugin.Chat(callCtx, &req)
		cancel()
		attempts = append(attempts, Attempt{Provider: p.Name, Latency: time.Since(start), Err: err})
		if err == nil {
			return resp, attempts, nil
		}
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			err = &sdk.Error{Code: sdk.CodeTimeout, Message: fmt.Sprintf("no answer within %s", timeout)}
		}
		last = err
		if ctx.Err() != nil || !retryable(err) || n == p.Retries {
			break
		}
		if err := r.sleep(ctx, r.backoff(n, err)); err != nil {
			break
		}
	}
	return nil, attempts, describeFailure(p.Name, len(attempts), last)
}

// retryable: rate limits, timeouts and unavailable upstreams are worth
// another try; auth, bad requests and invalid input are not.
func retryable(err error) bool {
	return errors.Is(err, sdk.ErrRateLimited) || errors.Is(err, sdk.ErrUnavailable) || errors.Is(err, sdk.ErrTimeout)
}

// backoff is exponential with full jitter on the upper half, and never
// shorter than a Retry-After the provider sent.
func (r *Providers) backoff(n int, err error) time.Duration {
	d := r.BaseBackoff << n
	d = d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
	var e *sdk.Error
	if errors.As(err, &e) && e.RetryAfter > d {
		d = e.RetryAfter
	}
	return d
}

// describeFailure renders `provider "default": rate limited after 4
// attempts (retry-after 20s)`, keeping the cause for errors.Is.
func describeFailure(name string, attempts int, err error) error {
	what := "failed"
	var e *sdk.Error
	if errors.As(err, &e) {
		switch e.Code {
		case sdk.CodeRateLimited:
			what = "rate limited"
		case sdk.CodeTimeout:
			what = "timed out"
		case sdk.CodeUnavailable:
			what = "unavailable"
		case sdk.CodeAuth:
			what = "refused the credentials"
		case sdk.CodeBadRequest:
			what = "rejected the request"
		}
	}
	tries := "1 attempt"
	if attempts != 1 {
		tries = fmt.Sprintf("%d attempts", attempts)
	}
	suffix := ""
	if e != nil && e.RetryAfter > 0 {
		suffix = fmt.Sprintf(" (retry-after %s)", e.RetryAfter)
	}
	return &providerError{msg: fmt.Sprintf("provider %q: %s after %s%s: %s", name, what, tries, suffix, errMessage(err)), err: err}
}

func errMessage(err error) string {
	var e *sdk.Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}

type providerError struct {
	msg string
	err error
}

func (e *providerError) Error() string { return e.msg }
func (e *providerError) Unwrap() error { return e.err }

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
