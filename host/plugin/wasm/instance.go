package wasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/sextant-dev/sextant/sdk"
)

// instance is one instantiation of the module. It runs one call at a time
// (a Go guest is single-threaded and keeps its response in a global), so
// it lives in the pool channel when idle.
type instance struct {
	m              *Module
	mod            api.Module
	alloc, call    api.Function
	stdout, stderr *lineWriter

	// ctx is the context of the call (or start) in progress. Host
	// functions run on the calling goroutine, so they read it unlocked.
	ctx context.Context
	// pendingHTTP is the response of the last http_request, waiting for
	// http_response.
	pendingHTTP []byte
	// memoryRefused is set when the guest asked for memory past the limit
	// during the current call (memory.go).
	memoryRefused bool
}

// minStartTimeout bounds an instance's start function (the Go runtime's
// and the plugin's init) when the call timeout is shorter: starting is not
// a call, and a loaded machine should not fail it.
const minStartTimeout = 10 * time.Second

// instantiate makes a new instance and runs its start function, bounded
// by ctx and max(CallTimeout, minStartTimeout).
func (m *Module) instantiate(parent context.Context) (*instance, error) {
	inst := &instance{
		m:      m,
		stdout: newLineWriter(m.log, "stdout"),
		stderr: newLineWriter(m.log, "stderr"),
	}
	timeout := max(m.cfg.CallTimeout, minStartTimeout)
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	inst.ctx = ctx
	cfg := m.modCfg.
		WithStdout(inst.stdout).
		WithStderr(inst.stderr).
		WithNanosleep(inst.nanosleep)
	ictx := experimental.WithMemoryAllocator(context.WithValue(ctx, instanceKey{}, inst), inst)
	mod, err := m.rt.InstantiateModule(ictx, m.compiled, cfg)
	inst.flush()
	if err != nil {
		if m.closed.Load() {
			return nil, m.errClosed()
		}
		return nil, inst.fault("start", timeout, err, parent)
	}
	inst.mod = mod
	if mod.IsClosed() {
		return nil, newCallError(m.cfg.Name, "start: exited with code 0")
	}
	inst.alloc = mod.ExportedFunction("sextant_alloc")
	inst.call = mod.ExportedFunction("sextant_call")
	return inst, nil
}

// checkAPI asks the instance which wire protocol version it speaks.
func (inst *instance) checkAPI(parent context.Context) error {
	ctx, cancel := context.WithTimeout(parent, inst.m.cfg.CallTimeout)
	defer cancel()
	inst.ctx = ctx
	res, err := inst.mod.ExportedFunction("sextant_api").Call(context.WithValue(ctx, instanceKey{}, inst))
	inst.flush()
	if err != nil {
		return inst.fault("sextant_api", inst.m.cfg.CallTimeout, err, parent)
	}
	if v := int32(res[0]); v != sdk.APIVersion {
		return newCallError(inst.m.cfg.Name, fmt.Sprintf("api version %d, host speaks %d", v, sdk.APIVersion), ErrAPIVersion)
	}
	return nil
}

// roundTrip runs one call: the request goes into a buffer the guest
// allocates, sextant_call answers with the packed address and length of
// the response, which is copied out before anything else runs. Every error
// is a fault after which the instance must not be used again.
func (inst *instance) roundTrip(parent context.Context, request []byte) ([]byte, error) {
	name := inst.m.cfg.Name
	ctx, cancel := context.WithTimeout(parent, inst.m.cfg.CallTimeout)
	defer cancel()
	inst.ctx = ctx
	inst.stdout.reset()
	inst.stderr.reset()
	inst.memoryRefused = false
	defer inst.flush()
	cctx := context.WithValue(ctx, instanceKey{}, inst)

	method := methodOf(request)
	res, err := inst.alloc.Call(cctx, uint64(len(request)))
	if err != nil {
		inst.flush()
		return nil, inst.fault(method, inst.m.cfg.CallTimeout, err, parent)
	}
	ptr := uint32(res[0])
	if ptr == 0 || !inst.mod.Memory().Write(ptr, request) {
		return nil, newCallError(name, fmt.Sprintf("sextant_alloc(%d) returned %#x, outside its memory", len(request), ptr))
	}
	res, err = inst.call.Call(cctx, uint64(ptr), uint64(len(request)))
	if err != nil {
		inst.flush()
		return nil, inst.fault(method, inst.m.cfg.CallTimeout, err, parent)
	}
	rptr, n := uint32(res[0]>>32), uint32(res[0])
	switch {
	case n == 0:
		return nil, newCallError(name, "empty response")
	case n > MaxMessage:
		return nil, newCallError(name, fmt.Sprintf("response of %d bytes exceeds the %s limit", n, sizeString(MaxMessage)))
	}
	out, ok := inst.mod.Memory().Read(rptr, n)
	if !ok {
		return nil, newCallError(name, fmt.Sprintf("response of %d bytes at %#x is outside its memory", n, rptr))
	}
	return bytes.Clone(out), nil
}

// methodOf reads the wire method of a request envelope for error
// messages ("call" when the envelope is not the shape sdk writes).
func methodOf(request []byte) string {
	if len(request) > 0 && request[0] != '{' { // api 2 (MessagePack)
		if m := sdk.EnvelopeMethod(request); m != "" {
			return m
		}
		return "call"
	}
	const head = `"method":"`
	i := bytes.Index(request[:min(len(request), 64)], []byte(head))
	if i < 0 {
		return "call"
	}
	rest := request[i+len(head):]
	end := bytes.IndexByte(rest[:min(len(rest), 40)], '"')
	if end <= 0 {
		return "call"
	}
	return string(rest[:end])
}

// fault turns an error of a guest function into one line naming the plugin
// and what it did. op is "start", "sextant_api" or the wire method of a
// call ("call" if unknown), bounded by timeout.
func (inst *instance) fault(op string, timeout time.Duration, err error, parent context.Context) error {
	name, cfg := inst.m.cfg.Name, inst.m.cfg
	prefix := ""
	if op == "start" || op == "sextant_api" {
		prefix = op + ": "
	}
	headline, oom := inst.stderr.crash()
	oom = oom || inst.memoryRefused
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		switch exit.ExitCode() {
		case sys.ExitCodeDeadlineExceeded, sys.ExitCodeContextCanceled:
			if perr := parent.Err(); perr != nil {
				return newCallError(name, fmt.Sprintf("%s canceled: %v", op, perr), perr)
			}
			return newCallError(name, fmt.Sprintf("%s: deadline exceeded after %s", op, timeout),
				context.DeadlineExceeded, sdk.ErrTimeout)
		}
		if oom {
			return newCallError(name, fmt.Sprintf("%sout of memory (limit %s)", prefix, sizeString(cfg.MemoryLimit)))
		}
		msg := fmt.Sprintf("%sexited with code %d", prefix, exit.ExitCode())
		if headline != "" {
			msg += ": " + headline
		}
		return newCallError(name, msg)
	}
	if oom {
		return newCallError(name, fmt.Sprintf("%sout of memory (limit %s)", prefix, sizeString(cfg.MemoryLimit)))
	}
	// A trap: wazero's message is "wasm error: unreachable" followed by a
	// stack trace, or a host function's panic followed by one.
	msg, _, _ := strings.Cut(err.Error(), "\n")
	msg = strings.TrimPrefix(msg, "wasm error: ")
	msg = strings.TrimSuffix(msg, " (recovered by wazero)")
	msg = fmt.Sprintf("%strapped: %s", prefix, msg)
	if headline != "" { // a Go guest crashing in a reactor traps after saying why
		msg += ": " + headline
	}
	return newCallError(name, msg)
}

// nanosleep is the instance's sleep (poll_oneoff): a real sleep that ends
// early when the call ends, since wazero can stop a guest only while it
// runs guest code. The guest then sees the module closed and stops.
func (inst *instance) nanosleep(ns int64) {
	t := time.NewTimer(time.Duration(ns))
	defer t.Stop()
	var done <-chan struct{}
	if inst.ctx != nil {
		done = inst.ctx.Done()
	}
	select {
	case <-t.C:
	case <-done:
	}
}

func (inst *instance) flush() {
	inst.stdout.flush()
	inst.stderr.flush()
}

// close discards the instance. A faulted module is usually closed already.
func (inst *instance) close() {
	if inst.mod != nil {
		_ = inst.mod.Close(context.Background())
	}
}
