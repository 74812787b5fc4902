package wasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
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
	request        api.Function // nil: the module has the per-call alloc ABI
	stdout, stderr *lineWriter

	// callCtx is the context every guest function runs with: it carries
	// the instance to the host functions (callingInstance), which wazero
	// shares between all instances of the runtime. It is made once.
	callCtx context.Context
	// parent is the caller's context of the call (or start) in progress,
	// done its Done channel, deadline the monotonic time (now()) past
	// which the call is stopped and timeout the bound that set it. The
	// guest's yield (hostYield) checks them; host functions run on the
	// calling goroutine, so they are read unlocked.
	parent   context.Context
	done     <-chan struct{}
	deadline int64
	timeout  time.Duration
	// scheduled is when (now()) the call last gave its thread to the Go
	// scheduler (hostYield).
	scheduled int64

	// reqPtr and reqCap locate the guest's reusable request buffer
	// (sextant_request), 0 until the first call.
	reqPtr, reqCap uint32
	// stack holds the parameters and the result of sextant_call.
	stack [2]uint64
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

// epoch anchors now: time.Since reads the monotonic clock.
var epoch = time.Now()

// now is the monotonic time in nanoseconds since epoch.
func now() int64 { return int64(time.Since(epoch)) }

// begin arms the deadline of a call (or start) bounded by timeout and by
// ctx.
func (inst *instance) begin(ctx context.Context, timeout time.Duration) {
	inst.parent, inst.done, inst.timeout = ctx, ctx.Done(), timeout
	t := now()
	inst.deadline, inst.scheduled = t+int64(timeout), t
	if d, ok := ctx.Deadline(); ok {
		inst.deadline = min(inst.deadline, int64(d.Sub(epoch)))
	}
}

// deadlineTime is the call's deadline as a wall-clock time, for host
// functions that hand it to Go APIs (http).
func (inst *instance) deadlineTime() time.Time {
	return epoch.Add(time.Duration(inst.deadline))
}

// schedInterval is how long a guest runs at most before its yield hands
// the thread to the Go scheduler (runtime.Gosched), so that the other
// goroutines of the process get it while a long call runs: a tenth of the
// 10 ms after which the runtime itself would ask. A garbage collection
// does not wait for it: its stop request is honoured at the next yield,
// whose call into Go checks for preemption (wasm-loop's gc-stop-ms). Each
// Gosched wakes another thread (~25 µs here), so every 100 µs, as it was,
// cost ~10% of a new instance's start (RATIONALE.md, "Why a wasm
// call is stopped by instrumentation").
const schedInterval = time.Millisecond

// testHookYield, when set by a test, runs at every yield.
var testHookYield func()

// hostYield is sextant_rt.yield, which the instrumented guest calls every
// yieldInterval loop headers and function entries: it stops the guest
// when its Module is closed, its caller's context is done or its deadline
// has passed. The exit error unwinds the guest without running more of it;
// fault turns it into the call's error.
func hostYield(ctx context.Context, _ api.Module, _ []uint64) {
	inst := callingInstance(ctx)
	if inst == nil {
		return
	}
	if testHookYield != nil {
		testHookYield()
	}
	if inst.m.closed.Load() {
		panic(sys.NewExitError(sys.ExitCodeContextCanceled))
	}
	select {
	case <-inst.done:
		panic(sys.NewExitError(sys.ExitCodeContextCanceled))
	default:
	}
	t := now()
	if t > inst.deadline {
		panic(sys.NewExitError(sys.ExitCodeDeadlineExceeded))
	}
	if t-inst.scheduled >= int64(schedInterval) {
		inst.scheduled = t
		runtime.Gosched()
	}
}

// instantiate makes a new instance and runs its start function, bounded
// by ctx and max(CallTimeout, minStartTimeout).
func (m *Module) instantiate(parent context.Context) (*instance, error) {
	inst := &instance{
		m:      m,
		stdout: newLineWriter(m.log, "stdout"),
		stderr: newLineWriter(m.log, "stderr"),
	}
	inst.callCtx = context.WithValue(context.Background(), instanceKey{}, inst)
	timeout := max(m.cfg.CallTimeout, minStartTimeout)
	inst.begin(parent, timeout)
	cfg := m.modCfg.
		WithStdout(inst.stdout).
		WithStderr(inst.stderr).
		WithNanosleep(inst.nanosleep)
	mod, err := m.eng.rt.InstantiateModule(experimental.WithMemoryAllocator(inst.callCtx, inst), m.compiled.mod, cfg)
	inst.flush()
	if err != nil {
		if mod != nil {
			_ = mod.Close(context.Background())
		}
		if m.closed.Load() {
			return nil, m.errClosed()
		}
		return nil, inst.fault("start", err)
	}
	inst.mod = mod
	if mod.IsClosed() {
		return nil, newCallError(m.cfg.Name, "start: exited with code 0")
	}
	inst.alloc = mod.ExportedFunction("sextant_alloc")
	inst.call = mod.ExportedFunction("sextant_call")
	if m.request {
		inst.request = mod.ExportedFunction("sextant_request")
	}
	if fn := mod.ExportedFunction("sextant_memory_limit"); fn != nil {
		// Part of starting: bounded by the start's deadline.
		inst.stack[0] = m.cfg.MemoryLimit
		err := fn.CallWithStack(inst.callCtx, inst.stack[:])
		inst.flush()
		if err != nil {
			inst.close()
			if m.closed.Load() {
				return nil, m.errClosed()
			}
			return nil, inst.fault("start", err)
		}
	}
	return inst, nil
}

// minAPI is the oldest api version the host still speaks.
const minAPI = 1

// checkAPI asks the instance which wire protocol version it speaks.
func (inst *instance) checkAPI(parent context.Context) error {
	inst.begin(parent, inst.m.cfg.CallTimeout)
	res, err := inst.mod.ExportedFunction("sextant_api").Call(inst.callCtx)
	inst.flush()
	if err != nil {
		return inst.fault("sextant_api", err)
	}
	if v := int32(res[0]); v < minAPI || v > sdk.APIVersion {
		return newCallError(inst.m.cfg.Name, fmt.Sprintf("api version %d, host speaks %s", v, apiRange()), ErrAPIVersion)
	}
	return nil
}

func apiRange() string {
	if minAPI == sdk.APIVersion {
		return strconv.Itoa(sdk.APIVersion)
	}
	return fmt.Sprintf("%d to %d", minAPI, sdk.APIVersion)
}

// roundTrip runs one call: the request goes into the guest's buffer
// (sextant_request's, reused from call to call, or a fresh one from
// sextant_alloc), sextant_call answers with the packed address and length
// of the response, which is copied out (appended to dst) before anything
// else runs. Every error is a fault after which the instance must not be
// used again.
func (inst *instance) roundTrip(ctx context.Context, request, dst []byte) ([]byte, error) {
	name := inst.m.cfg.Name
	inst.begin(ctx, inst.m.cfg.CallTimeout)
	inst.stdout.reset()
	inst.stderr.reset()
	inst.memoryRefused = false
	defer inst.flush()

	ptr, err := inst.buffer(request)
	if err != nil {
		return nil, err
	}
	if !inst.mod.Memory().Write(ptr, request) {
		return nil, newCallError(name, fmt.Sprintf("%s(%d) returned %#x, outside its memory", inst.bufferExport(), len(request), ptr))
	}
	inst.stack[0], inst.stack[1] = uint64(ptr), uint64(len(request))
	if err := inst.call.CallWithStack(inst.callCtx, inst.stack[:]); err != nil {
		inst.flush()
		return nil, inst.fault(methodOf(request), err)
	}
	rptr, n := uint32(inst.stack[0]>>32), uint32(inst.stack[0])
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
	return append(dst, out...), nil
}

// minRequestBuffer is the least the host asks sextant_request for, so
// that small requests of varying size do not each grow the buffer.
const minRequestBuffer = 4 << 10

// buffer returns the address of len(request) writable bytes in the guest: the
// reusable request buffer, asked for again only when too small, or a
// buffer from sextant_alloc for this call alone.
func (inst *instance) buffer(request []byte) (uint32, error) {
	size := uint32(len(request))
	fn, ask := inst.alloc, size
	if inst.request != nil {
		if size <= inst.reqCap && inst.reqPtr != 0 {
			return inst.reqPtr, nil
		}
		fn, ask = inst.request, max(size, minRequestBuffer, 2*inst.reqCap)
		if ask > MaxMessage {
			ask = max(size, MaxMessage)
		}
	}
	inst.stack[0] = uint64(ask)
	if err := fn.CallWithStack(inst.callCtx, inst.stack[:]); err != nil {
		inst.flush()
		return 0, inst.fault(methodOf(request), err)
	}
	ptr := uint32(inst.stack[0])
	if ptr == 0 {
		return 0, newCallError(inst.m.cfg.Name, fmt.Sprintf("%s(%d) returned %#x, outside its memory", inst.bufferExport(), ask, ptr))
	}
	if inst.request != nil {
		inst.reqPtr, inst.reqCap = ptr, ask
	}
	return ptr, nil
}

func (inst *instance) bufferExport() string {
	if inst.request != nil {
		return "sextant_request"
	}
	return "sextant_alloc"
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
// call ("call" if unknown), bounded by the instance's timeout.
func (inst *instance) fault(op string, err error) error {
	name, cfg := inst.m.cfg.Name, inst.m.cfg
	timeout, parent := inst.timeout, inst.parent
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
// early at the call's deadline, when its caller gives up or when the
// Module closes, since a guest can be stopped only while it runs its own
// code. The guest then reaches its next yield and is stopped there.
func (inst *instance) nanosleep(ns int64) {
	d := min(ns, inst.deadline-now())
	if d <= 0 {
		return
	}
	t := time.NewTimer(time.Duration(d))
	defer t.Stop()
	select {
	case <-t.C:
	case <-inst.done:
	case <-inst.m.done:
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
