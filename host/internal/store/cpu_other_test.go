//go:build !unix

package store

import "time"

// cpuTime is not measured on this system.
func cpuTime() time.Duration { return 0 }
