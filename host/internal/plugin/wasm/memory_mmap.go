//go:build linux || darwin

package wasm

import "syscall"

// reserve maps n bytes of zeroed, private, anonymous memory whose pages
// the system provides on first touch; nil if n is 0 or it cannot.
func reserve(n uint64) []byte {
	if n == 0 || n != uint64(int(n)) {
		return nil
	}
	b, err := syscall.Mmap(-1, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return nil
	}
	return b
}

// unreserve unmaps what reserve mapped.
func unreserve(b []byte) { _ = syscall.Munmap(b) }
