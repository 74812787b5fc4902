package process

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// useMemfd can be turned off by tests to exercise the portable fallback.
var useMemfd = true

var memfdWarn sync.Once

// openVerified returns the verified bytes of the binary at path, ready to
// exec. On Linux they are copied, while hashing, into a sealed memfd: the
// kernel then refuses every write to it, and nothing outside this process
// can name it. Where memfds cannot be executed (vm.memfd_noexec = 2, a
// seccomp filter, an old kernel) it falls back, once logged, to a private
// temporary copy.
func openVerified(path, dir, want, name string, log *slog.Logger) (*verifiedExe, error) {
	if useMemfd {
		exe, err := memfdExe(path, want, name)
		if err == nil || errors.Is(err, ErrChecksum) || !errors.Is(err, errMemfd) {
			return exe, err
		}
		memfdWarn.Do(func() {
			log.Warn("cannot execute plugins from a sealed memfd; verified binaries run from a private temporary copy", "error", err)
		})
	}
	return tempExe(path, dir, want)
}

// errMemfd marks a failure of the memfd mechanism itself (not of reading
// the plugin's file), after which the fallback is tried.
var errMemfd = errors.New("memfd unavailable")

func memfdExe(path, want, name string) (*verifiedExe, error) {
	src, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("verify sha256: %w", err)
	}
	defer src.Close()
	fd, err := unix.MemfdCreate("sextant-plugin-"+name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_EXEC)
	if errors.Is(err, unix.EINVAL) {
		// Before Linux 6.3 there is no MFD_EXEC; memfds are executable.
		fd, err = unix.MemfdCreate("sextant-plugin-"+name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: memfd_create: %w", errMemfd, err)
	}
	rw := os.NewFile(uintptr(fd), "memfd")
	defer rw.Close()
	if err := hashCopy(rw, src, want); err != nil {
		return nil, err
	}
	const seals = unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(rw.Fd(), unix.F_ADD_SEALS, seals); err != nil {
		return nil, fmt.Errorf("%w: seal: %w", errMemfd, err)
	}
	// execve refuses a file that is open for writing (ETXTBSY): keep a
	// read-only descriptor of the same sealed file and drop the writable one.
	ro, err := os.Open(fmt.Sprintf("/proc/self/fd/%d", rw.Fd()))
	if err != nil {
		return nil, fmt.Errorf("%w: reopen: %w", errMemfd, err)
	}
	return &verifiedExe{path: "/proc/self/fd/3", extra: ro, release: func() { ro.Close() }}, nil
}
