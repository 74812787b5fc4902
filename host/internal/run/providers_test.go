package run

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/sdk"
)

// fakeProvider stands in for a provider plugin: call n gets script[n] (the
// last entry repeats). A nil entry answers; hang blocks until the call's
// context ends and returns hang.err (or the context's error).
type fakeProvider struct {
	name   string
	script []error

	mu    sync.Mutex
	calls []sdk.ChatRequest
}

var _ sdk.Provider = (*fakeProvider)(nil)

type hang struct{ err error }

func (h *hang) Error() string { return "hang" }

func (f *fakeProvider) Describe() sdk.Info {
	return sdk.Info{Name: f.name, Kind: sdk.KindProvider, Version: "0.0.0", API: sdk.APIVersion}
}

func (f *fakeProvider) Chat(ctx context.Context, r *sdk.ChatRequest) (*sdk.ChatResponse, error) {
	f.mu.Lock()
	n := len(f.calls)
	f.calls = append(f.calls, *r)
	f.mu.Unlock()
	var err error
	if len(f.script) > 0 {
		err = f.script[min(n, len(f.script)-1)]
	}
	var h *hang
	if errors.As(err, &h) {
		<-ctx.Done()
		if h.err != nil {
			return nil, h.err
		}
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	return &sdk.ChatResponse{Text: "answer from " + f.name, Model: r.Model}, nil
}

func (f *fakeProvider) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

func rateLimited(after time.Duration) error {
	return &sdk.Error{Code: sdk.CodeRateLimited, Message: "slow down", RetryAfter: after}
}

var unavailable = &sdk.Error{Code: sdk.CodeUnavailable, Message: "upstream answered 503"}

// logRecord is one captured log line: level, message and attributes as text.
type logRecord struct {
	Level slog.Level
	Msg   string
	Attrs map[string]string
}

type captureHandler struct {
	mu      *sync.Mutex
	records *[]logRecord
}

func (h captureHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h captureHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h captureHandler) WithGroup(string) slog.Handler            { return h }
func (h captureHandler) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{Level: r.Level, Msg: r.Message, Attrs: map[string]string{}}
	r.Attrs(func(a slog.Attr) bool {
		rec.Attrs[a.Key] = a.Value.String()
		return true
	})
	h.mu.Lock()
	*h.records = append(*h.records, rec)
	h.mu.Unlock()
	return nil
}

// harness is a Providers with a fake clock that only moves when it sleeps,
// no jitter (each backoff is its upper bound), and captured logs.
type harness struct {
	*Providers
	start  time.Time
	clock  time.Time
	sleeps []time.Duration
	mu     sync.Mutex
	logs   []logRecord
}

func newHarness(ps ...*Provider) *harness {
	h := &harness{start: time.Now()}
	h.clock = h.start
	h.Providers = NewProviders(slog.New(captureHandler{mu: &h.mu, records: &h.logs}), ps...)
	h.now = func() time.Time { return h.clock }
	h.sleep = func(_ context.Context, d time.Duration) error {
		h.sleeps = append(h.sleeps, d)
		h.clock = h.clock.Add(d)
		return nil
	}
	h.jitter = func(d time.Duration) time.Duration { return d }
	return h
}

func (h *harness) advance(d time.Duration) { h.clock = h.clock.Add(d) }

// warnings returns the captured records at warn level or above.
func (h *harness) warnings() []logRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []logRecord
	for _, r := range h.logs {
		if r.Level >= slog.LevelWarn {
			out = append(out, r)
		}
	}
	return out
}

func chat(h *harness, ctx context.Context, name string) (*sdk.ChatResponse, string, []Attempt, error) {
	return h.Chat(ctx, name, &sdk.ChatRequest{Messages: []sdk.Message{{Role: "user", Content: "hi"}}})
}

func attemptProviders(as []Attempt) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.Provider
	}
	return out
}

func TestProviderRetryHonoursRetryAfter(t *testing.T) {
	f := &fakeProvider{name: "fake", script: []error{rateLimited(20 * time.Second), unavailable, rateLimited(90 * time.Second), nil}}
	h := newHarness(&Provider{Name: "default", Plugin: f, Model: "m", Retries: 3})
	resp, who, attempts, err := chat(h, context.Background(), "default")
	if err != nil {
		t.Fatal(err)
	}
	if who != "default" || resp.Text != "answer from fake" || len(attempts) != 4 {
		t.Fatalf("got %q from %q after %d attempts", resp.Text, who, len(attempts))
	}
	// Retry-After 20s; then backoff 500ms<<1; then Retry-After 90s capped at 60s.
	if want := []time.Duration{20 * time.Second, time.Second, 60 * time.Second}; !reflect.DeepEqual(h.sleeps, want) {
		t.Errorf("sleeps %v, want %v", h.sleeps, want)
	}
	w := h.warnings()
	if len(w) != 1 || w[0].Msg != "provider retry-after above the cap; waiting the cap" ||
		w[0].Attrs["provider"] != "default" || w[0].Attrs["retry_after"] != "1m30s" || w[0].Attrs["cap"] != "1m0s" {
		t.Errorf("warnings %+v", w)
	}
	if f.calls[0].Model != "m" {
		t.Errorf("model %q, want the provider's", f.calls[0].Model)
	}
}

func TestProviderRetryGivesUp(t *testing.T) {
	f := &fakeProvider{name: "fake", script: []error{rateLimited(20 * time.Second)}}
	h := newHarness(&Provider{Name: "default", Plugin: f, Retries: 3})
	_, _, attempts, err := chat(h, context.Background(), "default")
	const want = `provider "default" (plugin "fake"): rate limited after 4 attempts (retry-after 20s): slow down`
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %s", err, want)
	}
	if !errors.Is(err, sdk.ErrRateLimited) {
		t.Error("errors.Is(err, sdk.ErrRateLimited) is false")
	}
	var pe *ProviderError
	if !errors.As(err, &pe) || pe.Provider != "default" || pe.Attempts != 4 {
		t.Errorf("ProviderError %+v", pe)
	}
	if len(attempts) != 4 || !reflect.DeepEqual(h.sleeps, []time.Duration{20 * time.Second, 20 * time.Second, 20 * time.Second}) {
		t.Errorf("%d attempts, sleeps %v", len(attempts), h.sleeps)
	}
}

func TestProviderBackoff(t *testing.T) {
	h := newHarness()
	for _, tc := range []struct {
		name   string
		jitter func(time.Duration) time.Duration
		n      int
		err    error
		want   time.Duration
	}{
		{"first, no jitter", func(time.Duration) time.Duration { return 0 }, 0, unavailable, 250 * time.Millisecond},
		{"first, full jitter", func(d time.Duration) time.Duration { return d }, 0, unavailable, 500 * time.Millisecond},
		{"third, full jitter", func(d time.Duration) time.Duration { return d }, 2, unavailable, 2 * time.Second},
		{"capped", func(d time.Duration) time.Duration { return d }, 20, unavailable, maxBackoff},
		{"shift past 63 bits", func(d time.Duration) time.Duration { return d }, 70, unavailable, maxBackoff},
		{"retry-after longer", func(time.Duration) time.Duration { return 0 }, 0, rateLimited(3 * time.Second), 3 * time.Second},
		{"retry-after shorter", func(d time.Duration) time.Duration { return d }, 3, rateLimited(time.Second), 4 * time.Second},
		{"retry-after capped", func(time.Duration) time.Duration { return 0 }, 0, rateLimited(time.Hour), maxRetryAfter},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.jitter = tc.jitter
			if got := h.backoff("p", tc.n, tc.err); got != tc.want {
				t.Errorf("backoff %s, want %s", got, tc.want)
			}
		})
	}
	for range 1000 {
		if d := randomJitter(10); d < 0 || d > 10 {
			t.Fatalf("randomJitter(10) = %d", d)
		}
	}
	if d := randomJitter(0); d != 0 {
		t.Errorf("randomJitter(0) = %d", d)
	}
}

func TestProviderNoRetry(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"400", &sdk.Error{Code: sdk.CodeBadRequest, Message: "HTTP 400: max_tokens too large"}, `provider "default" (plugin "fake"): rejected the request after 1 attempt: HTTP 400: max_tokens too large`},
		{"401", &sdk.Error{Code: sdk.CodeAuth, Message: "HTTP 401: invalid api key"}, `provider "default" (plugin "fake"): refused the credentials after 1 attempt: HTTP 401: invalid api key`},
		{"403", &sdk.Error{Code: sdk.CodeAuth, Message: "HTTP 403: model not allowed"}, `provider "default" (plugin "fake"): refused the credentials after 1 attempt: HTTP 403: model not allowed`},
		{"invalid", &sdk.Error{Code: sdk.CodeInvalid, Message: "no messages"}, `provider "default" (plugin "fake"): rejected the request after 1 attempt: no messages`},
		{"internal", errors.New("plugin crashed"), `provider "default" (plugin "fake"): failed after 1 attempt: plugin crashed`},
		{"bare sentinel", sdk.ErrAuth, `provider "default" (plugin "fake"): refused the credentials after 1 attempt`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeProvider{name: "fake", script: []error{tc.err, nil}}
			h := newHarness(&Provider{Name: "default", Plugin: f, Retries: 3})
			_, _, attempts, err := chat(h, context.Background(), "default")
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error %v, want %s", err, tc.want)
			}
			if !errors.Is(err, tc.err) {
				t.Error("the plugin's error is not in the chain")
			}
			if f.count() != 1 || len(attempts) != 1 || len(h.sleeps) != 0 {
				t.Errorf("%d calls, %d attempts, sleeps %v; want 1, 1, none", f.count(), len(attempts), h.sleeps)
			}
		})
	}
}

func TestProviderTimeout(t *testing.T) {
	for _, tc := range []struct {
		name string
		hang error
	}{
		{"plugin returns the context error", &hang{}},
		{"plugin returns its own error", &hang{err: &sdk.Error{Code: sdk.CodeInternal, Message: "transport closed"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeProvider{name: "fake", script: []error{tc.hang}}
			h := newHarness(&Provider{Name: "default", Plugin: f, Timeout: time.Millisecond, Retries: 1})
			_, _, attempts, err := chat(h, context.Background(), "default")
			const want = `provider "default" (plugin "fake"): timed out after 2 attempts: no answer within 1ms`
			if err == nil || err.Error() != want {
				t.Fatalf("error %v, want %s", err, want)
			}
			if !errors.Is(err, sdk.ErrTimeout) || len(attempts) != 2 || !errors.Is(attempts[0].Err, sdk.ErrTimeout) {
				t.Errorf("errors.Is timeout %v, attempts %+v", errors.Is(err, sdk.ErrTimeout), attempts)
			}
		})
	}
	t.Run("caller cancels", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		f := &fakeProvider{name: "fake", script: []error{&hang{}}}
		b := &fakeProvider{name: "b"}
		h := newHarness(&Provider{Name: "default", Plugin: f, Retries: 3, Fallback: []string{"backup"}},
			&Provider{Name: "backup", Plugin: b})
		cancel()
		_, _, _, err := chat(h, ctx, "default")
		const want = `provider "default" (plugin "fake"): failed after 1 attempt: context canceled`
		if err == nil || err.Error() != want {
			t.Fatalf("error %v, want %s", err, want)
		}
		if !errors.Is(err, context.Canceled) || errors.Is(err, sdk.ErrTimeout) {
			t.Error("a cancelled call must stay context.Canceled, not a timeout")
		}
		if f.count() != 1 || b.count() != 0 || len(h.sleeps) != 0 {
			t.Errorf("%d calls, %d fallback calls, sleeps %v; want 1, 0, none", f.count(), b.count(), h.sleeps)
		}
	})
}

func TestProviderRetryAfterPastDeadline(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		base time.Duration
		left time.Duration
		want string
	}{
		{"retry-after", rateLimited(20 * time.Second), 0, 10 * time.Second, `provider "default" (plugin "fake"): rate limited after 1 attempt (retry-after 20s): slow down`},
		{"retry-after above the cap", rateLimited(5 * time.Minute), 0, 2 * time.Minute, `provider "default" (plugin "fake"): rate limited after 1 attempt (retry-after 5m0s): slow down`},
		{"backoff", unavailable, 20 * time.Second, 10 * time.Second, `provider "default" (plugin "fake"): unavailable after 1 attempt: upstream answered 503`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeProvider{name: "fake", script: []error{tc.err, nil}}
			h := newHarness(&Provider{Name: "default", Plugin: f, Retries: 3})
			if tc.base > 0 {
				h.BaseBackoff = tc.base
			}
			ctx, cancel := context.WithDeadline(context.Background(), h.start.Add(tc.left))
			defer cancel()
			_, _, _, err := chat(h, ctx, "default")
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error %v, want %s", err, tc.want)
			}
			if f.count() != 1 || len(h.sleeps) != 0 || len(h.warnings()) != 0 {
				t.Errorf("%d calls, sleeps %v, warnings %+v; want 1 call, no sleep, no warning", f.count(), h.sleeps, h.warnings())
			}
		})
	}
}

func TestProviderFallback(t *testing.T) {
	def := &fakeProvider{name: "d", script: []error{&sdk.Error{Code: sdk.CodeBadRequest, Message: "HTTP 400"}}}
	backup := &fakeProvider{name: "b", script: []error{unavailable}}
	spare := &fakeProvider{name: "s", script: []error{rateLimited(0)}}
	last := &fakeProvider{name: "l"}
	// default → backup → (backup's own fallback) spare → last; spare's
	// fallback back to default is not followed twice.
	h := newHarness(
		&Provider{Name: "default", Plugin: def, Retries: 3, Fallback: []string{"backup", "last"}},
		&Provider{Name: "backup", Plugin: backup, Retries: 1, Fallback: []string{"spare"}},
		&Provider{Name: "spare", Plugin: spare, Fallback: []string{"default"}},
		&Provider{Name: "last", Plugin: last, Model: "last-model"},
	)
	resp, who, attempts, err := chat(h, context.Background(), "default")
	if err != nil {
		t.Fatal(err)
	}
	if who != "last" || resp.Text != "answer from l" || resp.Model != "last-model" {
		t.Errorf("answer %q (%s) from %q", resp.Text, resp.Model, who)
	}
	if got, want := attemptProviders(attempts), []string{"default", "backup", "backup", "spare", "last"}; !reflect.DeepEqual(got, want) {
		t.Errorf("attempts %v, want %v", got, want)
	}
	type fallback struct{ provider, next, code, reason string }
	var got []fallback
	for _, r := range h.warnings() {
		if r.Msg != "provider failed; falling back" {
			t.Errorf("unexpected warning %+v", r)
			continue
		}
		got = append(got, fallback{r.Attrs["provider"], r.Attrs["next"], r.Attrs["code"], r.Attrs["reason"]})
	}
	want := []fallback{
		{"default", "backup", "bad_request", `provider "default" (plugin "d"): rejected the request after 1 attempt: HTTP 400`},
		{"backup", "spare", "unavailable", `provider "backup" (plugin "b"): unavailable after 2 attempts: upstream answered 503`},
		{"spare", "last", "rate_limited", `provider "spare" (plugin "s"): rate limited after 1 attempt: slow down`},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fallback log\n got %q\nwant %q", got, want)
	}
}

func TestProviderFallbackAllFail(t *testing.T) {
	def := &fakeProvider{name: "d", script: []error{rateLimited(20 * time.Second)}}
	backup := &fakeProvider{name: "b", script: []error{unavailable}}
	h := newHarness(
		&Provider{Name: "default", Plugin: def, Retries: 3, Fallback: []string{"backup"}},
		&Provider{Name: "backup", Plugin: backup},
	)
	_, who, attempts, err := chat(h, context.Background(), "default")
	const want = `all 2 providers failed: provider "default" (plugin "d"): rate limited after 4 attempts (retry-after 20s): slow down; ` +
		`provider "backup" (plugin "b"): unavailable after 1 attempt: upstream answered 503`
	if err == nil || err.Error() != want {
		t.Fatalf("error\n got %v\nwant %s", err, want)
	}
	if who != "" || len(attempts) != 5 {
		t.Errorf("who %q, %d attempts", who, len(attempts))
	}
	if !errors.Is(err, sdk.ErrRateLimited) || !errors.Is(err, sdk.ErrUnavailable) {
		t.Error("the chain's error must match each provider's error")
	}
}

func TestProviderUnknown(t *testing.T) {
	h := newHarness(&Provider{Name: "default", Plugin: &fakeProvider{name: "f"}})
	if _, _, _, err := chat(h, context.Background(), "defualt"); err == nil || err.Error() != `unknown provider "defualt"` {
		t.Errorf("error %v", err)
	}
}

func TestBreakerOpensAndFallsBack(t *testing.T) {
	// A dead endpoint for 12 calls, then alive again.
	script := make([]error, 12)
	for i := range script {
		script[i] = unavailable
	}
	f := &fakeProvider{name: "f", script: append(script, nil)}
	b := &fakeProvider{name: "b"}
	h := newHarness(
		&Provider{Name: "default", Plugin: f, Retries: 3, Fallback: []string{"backup"}},
		&Provider{Name: "backup", Plugin: b},
	)
	ctx := context.Background()

	// 4 failures: still closed. The 5th (first attempt of the next
	// request) opens the circuit and stops the retries.
	chat(h, ctx, "default")
	if f.count() != 4 {
		t.Fatalf("%d calls, want 4", f.count())
	}
	_, who, _, err := chat(h, ctx, "default")
	if f.count() != 5 || who != "backup" || err != nil {
		t.Fatalf("%d calls, answer from %q, err %v; want 5, backup, nil", f.count(), who, err)
	}
	if want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second}; !reflect.DeepEqual(h.sleeps, want) {
		t.Errorf("sleeps %v, want %v (none once the circuit opened)", h.sleeps, want)
	}
	var opened bool
	for _, r := range h.warnings() {
		if r.Msg == "provider circuit open" && r.Attrs["provider"] == "default" && r.Attrs["failures"] == "5" && r.Attrs["cooldown"] == "30s" {
			opened = true
		}
	}
	if !opened {
		t.Errorf("no circuit-open warning in %+v", h.warnings())
	}

	// Open: fail fast (no call) and fall back, the reason logged.
	h.advance(3 * time.Second)
	_, who, attempts, err := chat(h, ctx, "default")
	if err != nil || who != "backup" || f.count() != 5 || !reflect.DeepEqual(attemptProviders(attempts), []string{"backup"}) {
		t.Fatalf("answer from %q, err %v, %d calls, attempts %v", who, err, f.count(), attemptProviders(attempts))
	}
	w := h.warnings()
	const open = `provider "default": circuit open after 5 consecutive failures (retry in 27s)`
	if last := w[len(w)-1]; last.Msg != "provider failed; falling back" || last.Attrs["reason"] != open || last.Attrs["code"] != "unavailable" {
		t.Errorf("last warning %+v", last)
	}

	// Without a fallback the typed error surfaces.
	h2 := &Providers{byName: map[string]*Provider{"default": {Name: "default", Plugin: f}}, breakers: h.breakers,
		logger: h.logger, sleep: h.sleep, now: h.now, jitter: h.jitter}
	h.advance(500 * time.Millisecond)
	_, _, _, err = h2.Chat(ctx, "default", &sdk.ChatRequest{})
	if err == nil || err.Error() != open { // 26.5s left rounds up
		t.Fatalf("error %v, want %s", err, open)
	}
	var ce *CircuitOpenError
	if !errors.Is(err, ErrCircuitOpen) || !errors.Is(err, sdk.ErrUnavailable) || !errors.As(err, &ce) || ce.RetryIn != 27*time.Second {
		t.Errorf("typed error: %#v", err)
	}

	// Half-open after the cool-down: one probe, which fails and reopens
	// the circuit without retrying.
	h.advance(26500 * time.Millisecond)
	calls := f.count()
	_, who, _, _ = chat(h, ctx, "default")
	if f.count() != calls+1 || who != "backup" {
		t.Fatalf("probe: %d calls, answer from %q; want one call then backup", f.count()-calls, who)
	}
	if _, _, _, err = h2.Chat(ctx, "default", &sdk.ChatRequest{}); err == nil ||
		err.Error() != `provider "default": circuit open after 6 consecutive failures (retry in 30s)` {
		t.Fatalf("after a failed probe: %v", err)
	}

	// Probes until the endpoint answers; then closed: the next request
	// goes straight through.
	for f.count() < 12 {
		h.advance(30 * time.Second)
		chat(h, ctx, "default")
	}
	h.advance(30 * time.Second)
	if _, who, _, err = chat(h, ctx, "default"); err != nil || who != "default" {
		t.Fatalf("probe that succeeds: answer from %q, err %v", who, err)
	}
	if _, who, _, err = chat(h, ctx, "default"); err != nil || who != "default" {
		t.Fatalf("after closing: answer from %q, err %v", who, err)
	}
}

func TestBreakerStates(t *testing.T) {
	now := time.Date(2026, 2, 9, 10, 30, 0, 0, time.UTC)
	fail := func(b *breaker, n int) {
		for range n {
			probe, err := b.allow(now)
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			b.done(now, failedRetryable, probe)
		}
	}
	t.Run("an answer resets the count", func(t *testing.T) {
		for _, o := range []error{nil, sdk.ErrBadRequest, sdk.ErrAuth} {
			b := newBreaker("p", Breaker{})
			fail(b, 4)
			b.done(now, classify(o), false)
			fail(b, 4)
			if _, err := b.allow(now); err != nil {
				t.Errorf("after %v: %v", o, err)
			}
		}
	})
	t.Run("a neutral outcome does not", func(t *testing.T) {
		b := newBreaker("p", Breaker{})
		fail(b, 4)
		b.done(now, classify(errors.New("plugin crashed")), false)
		fail(b, 1)
		if _, err := b.allow(now); err == nil {
			t.Error("still closed after 5 failures")
		}
	})
	t.Run("settings", func(t *testing.T) {
		b := newBreaker("p", Breaker{Failures: 2, Cooldown: time.Minute})
		fail(b, 2)
		_, err := b.allow(now.Add(time.Second))
		if err == nil || err.Error() != `provider "p": circuit open after 2 consecutive failures (retry in 59s)` {
			t.Errorf("error %v", err)
		}
	})
	t.Run("never opens", func(t *testing.T) {
		b := newBreaker("p", Breaker{Failures: -1})
		fail(b, 100)
		if _, err := b.allow(now); err != nil {
			t.Error(err)
		}
	})
	t.Run("one probe at a time", func(t *testing.T) {
		b := newBreaker("p", Breaker{})
		fail(b, 5)
		later := now.Add(defaultBreakerCooldown)
		probe, err := b.allow(later)
		if err != nil || !probe {
			t.Fatalf("probe %v, err %v", probe, err)
		}
		_, err = b.allow(later)
		if err == nil || err.Error() != `provider "p": circuit open after 5 consecutive failures (probe in flight)` {
			t.Fatalf("second caller: %v", err)
		}
		// A probe that says nothing (the caller gave up) lets the next one through.
		b.done(later, neutral, probe)
		if probe, err = b.allow(later); err != nil || !probe {
			t.Fatalf("next probe %v, err %v", probe, err)
		}
		b.done(later, succeeded, probe)
		if probe, err = b.allow(later); err != nil || probe {
			t.Fatalf("closed: probe %v, err %v", probe, err)
		}
	})
	t.Run("late failure keeps the cool-down", func(t *testing.T) {
		b := newBreaker("p", Breaker{})
		inflight, _ := b.allow(now)
		fail(b, 5)
		b.done(now.Add(20*time.Second), failedRetryable, inflight)
		_, err := b.allow(now.Add(20 * time.Second))
		if err == nil || err.Error() != `provider "p": circuit open after 6 consecutive failures (retry in 10s)` {
			t.Errorf("error %v", err)
		}
	})
}

func TestBreakerConcurrent(t *testing.T) {
	f := &fakeProvider{name: "f", script: []error{unavailable}}
	p := NewProviders(slog.New(slog.DiscardHandler), &Provider{Name: "default", Plugin: f, Retries: 2})
	p.sleep = func(context.Context, time.Duration) error { return nil }
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10 {
				p.Chat(context.Background(), "default", &sdk.ChatRequest{})
			}
		})
	}
	wg.Wait()
	// Once open (real clock, 30s cool-down) nothing more goes out; the
	// exact number depends on interleaving but never reaches the 240 a
	// breakerless chain would make.
	if n := f.count(); n < 5 || n > 5+8*3 {
		t.Errorf("%d calls", n)
	}
}
