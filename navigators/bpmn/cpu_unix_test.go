//go:build unix

package bpmn

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user + system) this process has used so far;
// -1 when it cannot be read.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
