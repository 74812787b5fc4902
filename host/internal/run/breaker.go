package run

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sextant-dev/sextant/sdk"
)

// Breaker says when a provider's circuit opens and for how long. The zero
// value is the default: open after 5 consecutive retryable failures, probe
// again after 30s.
type Breaker struct {
	// Failures is how many consecutive retryable failures (rate limited,
	// timed out, unavailable) open the circuit; 0 means 5, a negative
	// number never opens it.
	Failures int
	// Cooldown is how long the circuit stays open before one probe call is
	// let through; 0 means 30s.
	Cooldown time.Duration
}

const (
	defaultBreakerFailures = 5
	defaultBreakerCooldown = 30 * time.Second
)

// ErrCircuitOpen matches (errors.Is) the error of a call refused because
// the provider's circuit is open. The error also matches
// sdk.ErrUnavailable.
var ErrCircuitOpen = errors.New("circuit open")

// CircuitOpenError is the error of a call the breaker refused without
// calling the provider.
type CircuitOpenError struct {
	Provider string
	// Failures is the number of consecutive failures that opened the circuit.
	Failures int
	// RetryIn is how long until a probe is let through; 0 while a probe is
	// already in flight.
	RetryIn time.Duration
	probing bool
}

// Error renders `provider "x": circuit open after 5 consecutive failures
// (retry in 27s)`.
func (e *CircuitOpenError) Error() string {
	when := fmt.Sprintf("retry in %s", e.RetryIn)
	if e.probing {
		when = "probe in flight"
	}
	return fmt.Sprintf("provider %q: circuit open after %d consecutive failures (%s)", e.Provider, e.Failures, when)
}

// Is matches ErrCircuitOpen and sdk.ErrUnavailable: to a caller a
// provider whose circuit is open is an unavailable one.
func (e *CircuitOpenError) Is(target error) bool {
	return target == ErrCircuitOpen || sdk.ErrUnavailable.Is(target)
}

type breakerState int

const (
	closed breakerState = iota
	open
	halfOpen
)

// breaker is one provider's circuit: closed → open after Failures
// consecutive retryable failures → half-open after Cooldown, letting one
// probe through → closed when the probe succeeds, open again when it
// fails. Calls are safe from concurrent steps.
type breaker struct {
	name     string
	failures int
	cooldown time.Duration

	mu       sync.Mutex
	state    breakerState
	count    int       // consecutive retryable failures
	openedAt time.Time // when the circuit last opened
	probing  bool      // a half-open probe is in flight
}

func newBreaker(name string, s Breaker) *breaker {
	b := &breaker{name: name, failures: s.Failures, cooldown: s.Cooldown}
	if b.failures == 0 {
		b.failures = defaultBreakerFailures
	}
	if b.cooldown <= 0 {
		b.cooldown = defaultBreakerCooldown
	}
	return b
}

// allow reports whether a call may go out now, and the error to return
// when not. A call allowed while half-open is the probe (probe is true);
// every allowed call reports its outcome with done.
func (b *breaker) allow(now time.Time) (probe bool, err error) {
	if b.failures < 0 {
		return false, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case closed:
		return false, nil
	case open:
		left := b.openedAt.Add(b.cooldown).Sub(now)
		if left > 0 {
			return false, &CircuitOpenError{Provider: b.name, Failures: b.count, RetryIn: ceilSecond(left)}
		}
		b.state = halfOpen
	}
	if b.probing {
		return false, &CircuitOpenError{Provider: b.name, Failures: b.count, probing: true}
	}
	b.probing = true
	return true, nil
}

// outcome of one call, as the breaker sees it.
type outcome int

const (
	// succeeded: the endpoint answered, even if it refused the request
	// (bad request, auth): it is alive.
	succeeded outcome = iota
	// failedRetryable: rate limited, timed out or unavailable.
	failedRetryable
	// neutral: says nothing about the endpoint (the caller gave up, the
	// plugin failed on its own).
	neutral
)

// done reports the outcome of an allowed call (probe as allow returned
// it). It returns true when this outcome opened the circuit.
func (b *breaker) done(now time.Time, o outcome, probe bool) bool {
	if b.failures < 0 {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if probe {
		b.probing = false
	}
	switch o {
	case succeeded:
		b.state, b.count, b.probing = closed, 0, false
	case failedRetryable:
		b.count++
		// A call that went out before the circuit opened and fails late
		// adds to the count but does not restart the cool-down.
		if probe || (b.state == closed && b.count >= b.failures) {
			b.state, b.openedAt = open, now
			return true
		}
	}
	return false
}

// failuresNow is the count of consecutive retryable failures.
func (b *breaker) failuresNow() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.count
}

// ceilSecond rounds d up to a whole second so that an open circuit never
// says "retry in 0s".
func ceilSecond(d time.Duration) time.Duration {
	if r := d % time.Second; r != 0 {
		d += time.Second - r
	}
	return d
}

func classify(err error) outcome {
	switch {
	case err == nil:
		return succeeded
	case retryable(err):
		return failedRetryable
	case errors.Is(err, sdk.ErrBadRequest), errors.Is(err, sdk.ErrAuth), errors.Is(err, sdk.ErrInvalid):
		return succeeded
	default:
		return neutral
	}
}
