package plugin_test

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// cpuTime is the CPU time (user + system) this process and, when pid is
// not 0, process pid have used so far; -1 when it cannot be read.
func cpuTime(pid int) time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return -1
	}
	d := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	if pid == 0 {
		return d
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// Fields after the command (which may hold spaces) start after ") ";
	// utime and stime are the 12th and 13th of them, in clock ticks.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	var ut, st int64
	if len(f) < 13 {
		return -1
	}
	fmt.Sscan(f[11], &ut)
	fmt.Sscan(f[12], &st)
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	return d + time.Duration(ut+st)*tick
}
