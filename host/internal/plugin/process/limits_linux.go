package process

import (
	"errors"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// sysProcAttr puts the child in its own process group (so a kill reaches its
// children too, and a terminal's ^C reaches only the host, which then closes
// the plugin) and has the kernel SIGKILL it when the host dies, however the
// host dies.
//
// With ns it also makes the child the init of a new PID namespace (inside a
// new user namespace that maps the host's ids to themselves when the host is
// not root): when the child dies, for whatever reason, the kernel kills every
// process left in the namespace, so nothing the plugin started outlives it —
// and through the parent-death signal, the host.
func sysProcAttr(ns bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if !ns {
		return a
	}
	a.Cloneflags = syscall.CLONE_NEWPID
	if uid := os.Geteuid(); uid != 0 || testUserNS != testUserNSOff {
		gid, n := os.Getegid(), 1
		if testUserNS == testUserNSBroken {
			n = 0 // an empty mapping: the kernel refuses the namespace
		}
		a.Cloneflags |= syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: n}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	}
	return a
}

// testUserNS lets tests running as root take the user-namespace path a
// non-root host takes, or make the kernel refuse it.
var testUserNS = testUserNSOff

const (
	testUserNSOff = iota
	testUserNSOn
	testUserNSBroken
)

var (
	// noNamespaces is set once creating namespaces has failed: the kernel
	// or a container forbids them, and asking again would fail again.
	noNamespaces atomic.Bool
	nsWarn       sync.Once
)

// useNamespaces reports whether the next child should get its own PID
// namespace.
func useNamespaces() bool { return !noNamespaces.Load() }

const nsRefusedMsg = "cannot give process plugins their own PID namespace; processes a plugin starts may outlive the host if it is killed"

// namespacesRefused turns namespaces off for good after a child could be
// started without them but not with them (the kernel or a container forbids
// them, and asking again would fail again), and logs that once.
func namespacesRefused(err error, log *slog.Logger) {
	noNamespaces.Store(true)
	nsWarn.Do(func() {
		log.Warn(nsRefusedMsg, "error", err)
	})
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
