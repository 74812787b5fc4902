package platform

import (
	"math/bits"
	"os"
	"sort"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

var hugePagesConfigs []hugePagesConfig

type hugePagesConfig struct {
	size int
	flag int
}

func (hpc *hugePagesConfig) match(size int) bool {
	return (size & (hpc.size - 1)) == 0
}

func init() {
	dirents, err := os.ReadDir("/sys/kernel/mm/hugepages/")
	if err != nil {
		return
	}

	for _, dirent := range dirents {
		name := dirent.Name()
		if !strings.HasPrefix(name, "hugepages-") {
			continue
		}
		if !strings.HasSuffix(name, "kB") {
			continue
		}
		n, err := strconv.ParseUint(name[10:len(name)-2], 10, 64)
		if err != nil {
			continue
		}
		if bits.OnesCount64(n) != 1 {
			continue
		}
		n *= 1024
		hugePagesConfigs = append(hugePagesConfigs, hugePagesConfig{
			size: int(n),
			flag: int(bits.TrailingZeros64(n)<<unix.MAP_HUGE_SHIFT) | unix.MAP_HUGETLB,
		})
	}

	sort.Slice(hugePagesConfigs, func(i, j int) bool {
		return hugePagesConfigs[i].size > hugePagesConfigs[j].size
	})
}

func mmapCodeSegment(size int) ([]byte, error) {
	flag := unix.MAP_ANON | unix.MAP_PRIVATE
	prot := unix.PROT_READ | unix.PROT_WRITE

	for _, hugePagesConfig := range hugePagesConfigs {
		if hugePagesConfig.match(size) {
			b, err := mmap(size, prot, flag|hugePagesConfig.flag) // sextant patch: mmap, not unix.Mmap
			if err != nil {
				continue
			}
			return b, nil
		}
	}

	if size >= thpSize { // sextant patch: transparent huge pages (mmapTHP)
		if b, err := mmapTHP(size, prot, flag); err == nil {
			return b, nil
		}
	}
	return mmap(size, prot, flag)
}

// sextant patch: code segments are mapped with MmapPtr and unmapped with
// MunmapPtr (not unix.Mmap's registry, which unmaps only whole mappings
// it made), so that mmapTHP can trim what it over-maps.

func mmap(size, prot, flag int) ([]byte, error) {
	p, err := unix.MmapPtr(-1, 0, nil, uintptr(size), prot, flag)
	if err != nil {
		return nil, err
	}
	return unsafe.Slice((*byte)(p), size), nil
}

func munmapCodeSegment(code []byte) error {
	return unix.MunmapPtr(unsafe.Pointer(&code[0]), uintptr(len(code)))
}

// thpSize is the size of a transparent huge page (amd64, arm64 with 4 KiB
// base pages).
const thpSize = 2 << 20

// mmapTHP maps size bytes at a thpSize boundary and asks the kernel for
// transparent huge pages there (sextant). A large module's machine code
// then takes a few TLB entries instead of thousands: a guest's call runs
// across code spread over megabytes, and with 4 KiB pages it evicted the
// host's own TLB entries on every call. Where THP is off the advice is
// ignored and the pages are ordinary ones. (sextant patch)
func mmapTHP(size, prot, flag int) ([]byte, error) {
	p, err := unix.MmapPtr(-1, 0, nil, uintptr(size+thpSize), prot, flag)
	if err != nil {
		return nil, err
	}
	head := (thpSize - uintptr(p)%thpSize) % thpSize
	if head > 0 {
		_ = unix.MunmapPtr(p, head)
	}
	if tail := thpSize - head; tail > 0 {
		_ = unix.MunmapPtr(unsafe.Add(p, head+uintptr(size)), tail)
	}
	b := unsafe.Slice((*byte)(unsafe.Add(p, head)), size)
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	return b, nil
}
