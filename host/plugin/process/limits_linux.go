package process

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// sysProcAttr puts the child in its own process group (so a kill reaches its
// children too, and a terminal's ^C reaches only the host, which then closes
// the plugin) and has the kernel SIGKILL it when the host dies, however the
// host dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// setMemoryLimit caps the child's data segment. RLIMIT_DATA, not RLIMIT_AS:
// since Linux 4.7 it counts private writable mappings, which is what a heap
// is, while a Go program reserves far more address space than it uses and
// fails at start under a tight RLIMIT_AS.
func setMemoryLimit(pid int, limit int64) error {
	if limit <= 0 {
		return nil
	}
	return unix.Prlimit(pid, unix.RLIMIT_DATA, &unix.Rlimit{Cur: uint64(limit), Max: uint64(limit)}, nil)
}

// killTree sends SIGKILL to the process group the child leads. Even after the
// child is reaped its group may hold grandchildren; a reused pid would lead a
// group of its own only if it called setpgid.
func killTree(proc *os.Process) error {
	err := syscall.Kill(-proc.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}
