package wasm

import (
	"runtime"

	"github.com/tetratelabs/wazero/experimental"
)

// The memory limit is enforced here rather than with wazero's
// RuntimeConfig.WithMemoryLimitPages: a grow that wazero refuses for the
// limit is invisible to the host, and a guest not written in Go then traps
// without a word, while a refusal here is recorded, so the fault reads
// "out of memory" whatever language the plugin is in. (A Go guest also
// prints "fatal error: out of memory" on stderr.)
//
// Where the system allows (memory_mmap.go), an instance's memory is one
// anonymous mapping of its whole limit, made when the instance is: the
// kernel hands out zeroed pages as the guest first touches them, a grow
// never copies, and the guest's memory is not Go heap, so it neither
// costs the host's garbage collector nor paces it. Elsewhere, and when
// the mapping fails, it is a Go slice grown by copying.

// linearMemory backs one instance's memory and refuses to grow it past
// the limit. wazero calls it on the guest's goroutine, like host functions.
type linearMemory struct {
	inst *instance
	buf  []byte
	// mapped is set when buf is a mapping of cap(buf) bytes (reserve),
	// unmapped by Free or, for an instance never closed, by cleanup.
	mapped  bool
	cleanup runtime.Cleanup
}

// Allocate implements experimental.MemoryAllocator.
func (inst *instance) Allocate(capacity, maximum uint64) experimental.LinearMemory {
	limit := inst.m.cfg.MemoryLimit
	l := &linearMemory{inst: inst}
	if b := reserve(min(maximum, limit)); b != nil {
		l.buf, l.mapped = b[:0], true
		l.cleanup = runtime.AddCleanup(l, unreserve, b)
		return l
	}
	l.buf = make([]byte, 0, min(capacity, limit))
	return l
}

// Reallocate implements experimental.LinearMemory. Memory only grows, so
// the bytes between len and cap were never handed out and are still zero.
func (l *linearMemory) Reallocate(size uint64) []byte {
	limit := l.inst.m.cfg.MemoryLimit
	if size > limit {
		l.inst.memoryRefused = true
		return nil
	}
	if size <= uint64(cap(l.buf)) {
		l.buf = l.buf[:size]
		return l.buf
	}
	if l.mapped { // beyond the module's own maximum: wazero refuses first
		return nil
	}
	b := make([]byte, size, min(max(size, 2*uint64(cap(l.buf))), limit))
	copy(b, l.buf)
	l.buf = b
	return b
}

// Free implements experimental.LinearMemory. wazero calls it when the
// instance is closed, after which nothing reads the memory.
func (l *linearMemory) Free() {
	if l.mapped {
		l.cleanup.Stop()
		unreserve(l.buf[:cap(l.buf)])
		l.mapped = false
	}
	l.buf = nil
}
