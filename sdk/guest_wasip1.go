//go:build wasip1

package sdk

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"unsafe"
)

// The WebAssembly ABI. See PROTOCOL-wasm.md for the full contract.
//
// The host writes a request envelope into the buffer sextant_request
// returned (reused by every call until the host asks again; hosts before
// it used a fresh sextant_alloc buffer per call), then calls sextant_call
// with its address and length. The result is the response envelope's
// address and length packed into one i64 (address in the high 32 bits).
// The response stays valid until the next call into the module.

var (
	reqBuf   []byte                 // the request buffer of sextant_request
	pinned   = map[uintptr][]byte{} // sextant_alloc buffers, kept from the GC
	lastResp []byte
	guestG   *guest
	guestErr error
)

func guestHandler() (*guest, error) {
	if guestG == nil && guestErr == nil {
		p, err := only()
		if err != nil {
			guestErr = err
		} else {
			guestG = newGuest(Serve(p).(*handler))
		}
	}
	return guestG, guestErr
}

//go:wasmexport sextant_api
func wasmAPI() int32 { return APIVersion }

//go:wasmexport sextant_request
func wasmRequest(size int32) int32 {
	if size <= 0 {
		size = 1
	}
	if int(size) > cap(reqBuf) {
		reqBuf = make([]byte, size)
	}
	reqBuf = reqBuf[:cap(reqBuf)]
	return int32(uintptr(unsafe.Pointer(&reqBuf[0])))
}

//go:wasmexport sextant_alloc
func wasmAlloc(size int32) int32 {
	if size <= 0 {
		size = 1
	}
	buf := make([]byte, size)
	ptr := uintptr(unsafe.Pointer(&buf[0]))
	pinned[ptr] = buf
	return int32(ptr)
}

//go:wasmexport sextant_call
func wasmCall(ptr, size int32) int64 {
	var req []byte
	if len(reqBuf) > 0 && uintptr(ptr) == uintptr(unsafe.Pointer(&reqBuf[0])) {
		req = reqBuf // reused: Handle must not keep it past its return
	} else {
		req = pinned[uintptr(ptr)]
		delete(pinned, uintptr(ptr))
	}
	if size >= 0 && int(size) <= len(req) {
		req = req[:size]
	}
	g, err := guestHandler()
	if err != nil {
		lastResp = []byte(fmt.Sprintf(`{"error":{"code":"internal","message":%q}}`, err.Error()))
	} else {
		// The host copies the answer out before its next call, so the
		// next answer may overwrite it.
		lastResp = g.answer(context.Background(), req)
	}
	if len(lastResp) == 0 {
		return 0
	}
	return int64(uintptr(unsafe.Pointer(&lastResp[0])))<<32 | int64(len(lastResp))
}

// gcPercent is the guest's GOGC once the host has told it its memory
// limit (sextant_memory_limit). The Go default, 100, collects a small heap
// every 4 MiB allocated, and a collection in a wasm guest costs about a
// millisecond; at 400 it happens every 16 MiB, a quarter as often. The
// memory limit (gcLimit of the instance's) makes the collector run as
// often as it must before the heap could reach the instance's limit, so
// a plugin with a large live heap collects instead of running out.
const gcPercent = 400

// gcLimit is the share of the instance's memory limit the Go runtime is
// held to (debug.SetMemoryLimit): the rest is room for what the limit does
// not count exactly (fragmentation, the request and response buffers).
func gcLimit(limit int64) int64 { return limit / 4 * 3 }

//go:wasmexport sextant_memory_limit
func wasmMemoryLimit(limit int64) {
	if limit <= 0 {
		return
	}
	debug.SetMemoryLimit(gcLimit(limit))
	debug.SetGCPercent(gcPercent)
}

// Main serves the registered plugin. In a c-shared (reactor) WebAssembly
// build it is never called: the host calls the exported functions. In a
// command-mode wasip1 build it explains how to build a plugin and exits.
func Main() {
	fmt.Fprintln(os.Stderr, "sextant plugin: build WebAssembly plugins with -buildmode=c-shared")
	os.Exit(2)
}
