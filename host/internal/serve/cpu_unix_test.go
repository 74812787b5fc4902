//go:build unix

package serve_test

import (
	"syscall"
	"time"
)

// cpuTime is the process's user+system CPU time. The benchmarks report
// it per call beside wall time, because on a shared machine wall time
// mostly measures the neighbours.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
