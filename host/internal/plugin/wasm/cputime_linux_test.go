package wasm

import (
	"syscall"
	"time"
)

// threadCPU is the CPU time of the calling OS thread (RUSAGE_THREAD): on a
// busy machine it shows the cost of a call where wall time shows the queue.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	const rusageThread = 1
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
