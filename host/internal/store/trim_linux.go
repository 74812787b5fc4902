//go:build linux

package store

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// TrimResident drops this process's resident pages of the store's
// memory-mapped files (Badger maps its value logs and tables). The data
// stays in the kernel's page cache and is faulted back in on the next read,
// so nothing is lost and nothing is written: only the process's resident
// set shrinks. A long replay calls it now and then, so that its peak RSS
// reflects its working set, not every page of a dataset it read once.
//
// Badger maps its files shared; for shared file mappings MADV_DONTNEED
// unmaps pages without discarding them (dirty pages live in the page cache).
func (s *Store) TrimResident() {
	dir, err := filepath.Abs(s.dir)
	if err != nil {
		return
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// address perms offset dev inode path
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || !strings.HasPrefix(fields[5], dir+string(filepath.Separator)) {
			continue
		}
		if len(fields[1]) < 4 || fields[1][3] != 's' { // shared mappings only
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		_, _, _ = unix.Syscall(unix.SYS_MADVISE, uintptr(start), uintptr(end-start), unix.MADV_DONTNEED)
	}
}
