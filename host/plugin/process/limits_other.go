//go:build !linux

package process

import (
	"errors"
	"os"
	"syscall"
)

// Outside Linux there is no parent-death signal and no RLIMIT_DATA through
// prlimit: the child is killed on Close and on faults only, and its memory
// is not capped.
func sysProcAttr() *syscall.SysProcAttr { return nil }

func setMemoryLimit(int, int64) error { return nil }

func killTree(proc *os.Process) error {
	if err := proc.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}
