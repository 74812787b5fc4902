package wasm

import "github.com/tetratelabs/wazero/experimental"

// The memory limit is enforced here rather than with wazero's
// RuntimeConfig.WithMemoryLimitPages: a grow that wazero refuses for the
// limit is invisible to the host, and a guest not written in Go then traps
// without a word, while a refusal here is recorded, so the fault reads
// "out of memory" whatever language the plugin is in. (A Go guest also
// prints "fatal error: out of memory" on stderr.)

// linearMemory backs one instance's memory and refuses to grow it past
// the limit. wazero calls it on the guest's goroutine, like host functions.
type linearMemory struct {
	inst *instance
	buf  []byte
}

// Allocate implements experimental.MemoryAllocator.
func (inst *instance) Allocate(capacity, _ uint64) experimental.LinearMemory {
	return &linearMemory{inst: inst, buf: make([]byte, 0, min(capacity, inst.m.cfg.MemoryLimit))}
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
	b := make([]byte, size, min(max(size, 2*uint64(cap(l.buf))), limit))
	copy(b, l.buf)
	l.buf = b
	return b
}

// Free implements experimental.LinearMemory.
func (l *linearMemory) Free() { l.buf = nil }
