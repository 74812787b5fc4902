package evolve

import (
	"fmt"
	"math"
)

// The defaults of Options.
const (
	DefaultConfidence = 0.95
	DefaultResamples  = 2000
)

// Options control the paired statistics. The zero value is the default:
// 95 % intervals from 2000 bootstrap resamples with seed 0.
//
// Options are a value: pass them by value and change a copy. Compare and
// the built-in gates must be given the same Options, so that a gate which
// recomputes a metric at its own confidence draws the same resamples.
type Options struct {
	// Confidence is the two-sided level of the percentile intervals, in
	// (0, 1); 0 means DefaultConfidence.
	Confidence float64
	// Resamples is the number of bootstrap resamples; 0 means
	// DefaultResamples.
	Resamples int
	// Seed seeds the bootstrap's PCG generator. Every seed is valid.
	Seed uint64
	// MinFidelity is the least share of counted self-replays that must
	// reproduce their trace for the verdict not to fail ([replay]
	// min_fidelity); nil means 1, every one.
	MinFidelity *float64
}

// Validate reports options that Compare would refuse.
func (o Options) Validate() error {
	switch {
	case math.IsNaN(o.Confidence) || o.Confidence < 0 || o.Confidence >= 1:
		return fmt.Errorf("confidence %v is not in (0, 1)", o.Confidence)
	case o.Resamples < 0:
		return fmt.Errorf("resamples %d is negative", o.Resamples)
	case o.MinFidelity != nil && !(*o.MinFidelity >= 0 && *o.MinFidelity <= 1):
		return fmt.Errorf("min fidelity %v is not in [0, 1]", *o.MinFidelity)
	}
	return nil
}

// withDefaults fills zero fields. Invalid options are a programming error
// (they come from code, or from input the caller validated), so it panics.
func (o Options) withDefaults() Options {
	if err := o.Validate(); err != nil {
		panic("evolve: invalid options: " + err.Error())
	}
	if o.Confidence == 0 {
		o.Confidence = DefaultConfidence
	}
	if o.Resamples == 0 {
		o.Resamples = DefaultResamples
	}
	return o
}

// minFidelity is MinFidelity, 1 when unset.
func (o Options) minFidelity() float64 {
	if o.MinFidelity == nil {
		return 1
	}
	return *o.MinFidelity
}
