//go:build !linux

package process

import (
	"errors"
	"log/slog"
	"os"
	"syscall"
)

// Outside Linux there is no parent-death signal, no PID namespace and no
// RLIMIT_DATA through prlimit: the child is killed on Close and on faults
// only, and its memory is not capped.
func sysProcAttr(bool) *syscall.SysProcAttr { return nil }

func useNamespaces() bool { return false }

func namespacesRefused(error, *slog.Logger) {}

func setMemoryLimit(int, int64) error { return nil }

func killTree(proc *os.Process) error {
	if err := proc.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}
