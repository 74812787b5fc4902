// Package wasm is the WebAssembly transport of sextant plugins: it compiles
// a plugin module once with wazero, keeps a pool of sandboxed instances and
// carries wire envelopes to them through the ABI of sdk/PROTOCOL-wasm.md.
//
// The sandbox (DESIGN §3.4) is what this package must not loosen: an
// instance sees no files, no environment, no arguments but its name, no
// stdin and no sockets; its stdout and stderr go to the log; its memory and
// the duration of each call are bounded; http goes only to the hosts the
// pipeline granted. An instance that traps, exits, runs out of memory or
// overruns its deadline is thrown away and rebuilt for the next call, so a
// misbehaving plugin fails its call and never the host.
//
// It must not know any particular plugin, nor the manifest format: the
// caller (package plugin) reads plugin.toml and fills in a Config.
package wasm

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/sextant-dev/sextant/host/internal/plugin"
)

// Sentinels for errors.Is on the errors of Open and RoundTrip.
var (
	// ErrChecksum: the file does not have the sha256 the manifest promises.
	ErrChecksum = errors.New("sha256 mismatch")
	// ErrAPIVersion: the module speaks another version of the wire protocol.
	ErrAPIVersion = errors.New("api version mismatch")
	// ErrClosed: the Module was closed.
	ErrClosed = errors.New("closed")
)

// The exports of a plugin module, with their signatures
// (sdk/PROTOCOL-wasm.md). sextant_request (one call per round trip into a
// reused buffer) and sextant_alloc (a buffer per call) are alternatives: a
// module needs one of them. sextant_memory_limit is optional: the host
// tells the instance its memory limit through it once it has started.
var (
	i32, i64 = api.ValueTypeI32, api.ValueTypeI64
	exports  = []export{
		{"sextant_api", nil, []api.ValueType{i32}},
		{"sextant_request", []api.ValueType{i32}, []api.ValueType{i32}},
		{"sextant_alloc", []api.ValueType{i32}, []api.ValueType{i32}},
		{"sextant_call", []api.ValueType{i32, i32}, []api.ValueType{i64}},
		{"sextant_memory_limit", []api.ValueType{i64}, nil},
	}
)

type export struct {
	name            string
	params, results []api.ValueType
}

// optional reports whether the export may be missing; request is whether
// the module exports sextant_request.
func (e export) optional(request bool) bool {
	switch e.name {
	case "sextant_request", "sextant_memory_limit":
		return true
	case "sextant_alloc":
		return request
	}
	return false
}

// Module is an open wasm plugin: the compiled module (shared with every
// Module of the process opened from the same file, see engine) and a pool
// of instances. It is safe for concurrent use; calls beyond the pool size
// wait for a free instance.
type Module struct {
	cfg      Config
	log      *slog.Logger
	eng      *engine
	sum      [sha256.Size]byte
	compiled *compiled
	modCfg   wazero.ModuleConfig
	http     *http.Client
	// request is true when the module exports sextant_request: calls
	// then reuse one request buffer (sdk/PROTOCOL-wasm.md).
	request bool

	// pool holds Config.Pool slots; a nil slot is instantiated on use.
	pool chan *instance
	// mu orders returning an instance to the pool against Close.
	mu     sync.Mutex
	closed atomic.Bool
	// done is closed by Close: it wakes waiting callers and sleeping
	// guests.
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

var _ plugin.Conn = (*Module)(nil)

// Open verifies the file at cfg.Path against cfg.SHA256, compiles it (or
// finds it compiled in this process or in the disk cache), instantiates
// one instance and checks that it speaks a supported api version. Further
// instances are made on demand, up to cfg.Pool.
//
// Open does not call describe: package plugin asks for the Info over the
// returned Conn.
func Open(ctx context.Context, cfg Config) (*Module, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	eng, err := acquireEngine(ctx, cfg.CacheDir, cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("plugin %q: %w", cfg.Name, err)
	}
	bin, sum, err := eng.read(cfg.Path)
	if err != nil {
		eng.release()
		return nil, fmt.Errorf("plugin %q: %w", cfg.Name, err)
	}
	// Verify before compiling: compiling is where untrusted bytes first
	// meet the host.
	if cfg.SHA256 != "" {
		if got := hex.EncodeToString(sum[:]); !strings.EqualFold(got, cfg.SHA256) {
			eng.release()
			return nil, fmt.Errorf("plugin %q: %w (manifest %s, file %s)", cfg.Name, ErrChecksum, abbrev(cfg.SHA256), abbrev(got))
		}
	}
	m := &Module{cfg: cfg, log: cfg.Logger.With("plugin", cfg.Name), eng: eng, sum: sum, done: make(chan struct{})}
	m.http = m.newHTTPClient()
	m.pool = make(chan *instance, cfg.Pool)
	ok := false
	defer func() {
		if !ok {
			m.Close(context.WithoutCancel(ctx))
		}
	}()

	if m.compiled, err = eng.compile(ctx, m.log, sum, bin, cfg.Path); err != nil {
		return nil, fmt.Errorf("plugin %q: compile %s: %w", cfg.Name, filepath.Base(cfg.Path), err)
	}
	if m.request, err = checkExports(m.compiled.mod, cfg.MemoryLimit); err != nil {
		return nil, fmt.Errorf("plugin %q: %s: %w", cfg.Name, filepath.Base(cfg.Path), err)
	}
	m.modCfg = m.moduleConfig()

	first, err := m.instantiate(ctx)
	if err != nil {
		return nil, err
	}
	if err := first.checkAPI(ctx); err != nil {
		first.close()
		return nil, err
	}
	m.pool <- first
	for range cfg.Pool - 1 {
		m.pool <- nil
	}
	ok = true
	return m, nil
}

// moduleConfig is what every instance gets: the sandbox. wazero grants
// nothing by default (no mounts, env, stdin or sockets), so this only
// names what is given: the plugin's name as argv[0], clocks and
// randomness. Output streams and sleep are per instance (instantiate).
func (m *Module) moduleConfig() wazero.ModuleConfig {
	c := wazero.NewModuleConfig().
		WithName(""). // anonymous: the pool holds several instances of one module
		WithArgs(m.cfg.Name).
		// Go c-shared (reactor) builds initialise in _initialize; a module
		// without it (wat-gate) needs nothing run. _start would run main.
		WithStartFunctions("_initialize").
		WithSysNanotime().
		WithSysWalltime()
	if clock := m.cfg.Clock; clock != nil {
		c = c.WithWalltime(func() (int64, int32) {
			t := clock()
			return t.Unix(), int32(t.Nanosecond())
		}, sys.ClockResolution(time.Microsecond))
	}
	if m.cfg.Rand != nil {
		c = c.WithRandSource(m.cfg.Rand)
	} else {
		c = c.WithRandSource(rand.Reader)
	}
	return c
}

// checkExports reports a missing or mistyped ABI export, a command
// module or a memory too large to start, in words a plugin author can act
// on. request reports whether the module has the one-call ABI.
func checkExports(c wazero.CompiledModule, memoryLimit uint64) (request bool, err error) {
	fns := c.ExportedFunctions()
	mem, ok := c.ExportedMemories()["memory"]
	if !ok {
		return false, errors.New(`missing export "memory" (see sdk/PROTOCOL-wasm.md)`)
	}
	if start := uint64(mem.Min()) * pageSize; start > memoryLimit {
		return false, fmt.Errorf("starts with %s of memory, over the %s limit", sizeString(start), sizeString(memoryLimit))
	}
	_, request = fns["sextant_request"]
	for _, want := range exports {
		fn, ok := fns[want.name]
		if !ok && want.optional(request) {
			continue
		}
		if !ok {
			if _, cmd := fns["_start"]; cmd && fns["_initialize"] == nil {
				return false, errors.New("a command module (exports _start); build it with -buildmode=c-shared")
			}
			return false, fmt.Errorf("missing export %q (see sdk/PROTOCOL-wasm.md)", want.name)
		}
		if !equalTypes(fn.ParamTypes(), want.params) || !equalTypes(fn.ResultTypes(), want.results) {
			return false, fmt.Errorf("export %q has type %s, want %s", want.name,
				signature(fn.ParamTypes(), fn.ResultTypes()), signature(want.params, want.results))
		}
	}
	return request, nil
}

func equalTypes(a, b []api.ValueType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func signature(params, results []api.ValueType) string {
	names := func(ts []api.ValueType) string {
		s := make([]string, len(ts))
		for i, t := range ts {
			s[i] = api.ValueTypeName(t)
		}
		return "(" + strings.Join(s, ", ") + ")"
	}
	return names(params) + " -> " + names(results)
}

// abbrev shortens a hex digest for an error message.
func abbrev(digest string) string {
	const n = 12
	if len(digest) <= n {
		return digest
	}
	return strings.ToLower(digest[:n]) + "…"
}

// RoundTrip implements plugin.Conn: it runs one call on a free instance.
// Any fault of the instance fails this call with an error naming the
// plugin and the fault, and the instance is rebuilt for the next call.
func (m *Module) RoundTrip(ctx context.Context, request []byte) ([]byte, error) {
	return m.RoundTripAppend(ctx, request, nil)
}

// RoundTripAppend is RoundTrip appending the response to dst (which the
// sdk's client reuses from call to call, so that a call does not allocate
// a buffer for the copy of the answer out of the guest's memory).
func (m *Module) RoundTripAppend(ctx context.Context, request, dst []byte) ([]byte, error) {
	if m.closed.Load() {
		return nil, m.errClosed()
	}
	if len(request) > MaxMessage {
		return nil, fmt.Errorf("plugin %q: request of %d bytes exceeds the %s limit", m.cfg.Name, len(request), sizeString(MaxMessage))
	}
	var inst *instance
	select {
	case inst = <-m.pool:
	case <-m.done:
		return nil, m.errClosed()
	case <-ctx.Done():
		return nil, fmt.Errorf("plugin %q: waiting for a free instance: %w", m.cfg.Name, ctx.Err())
	}
	defer func() { m.putBack(inst) }()
	if inst == nil {
		var err error
		if inst, err = m.instantiate(ctx); err != nil {
			return nil, err
		}
	}
	resp, err := inst.roundTrip(ctx, request, dst)
	if err != nil {
		inst.close()
		inst = nil
		if m.closed.Load() {
			return nil, m.errClosed()
		}
		m.log.Debug("instance discarded", "fault", err)
		return nil, err
	}
	return resp, nil
}

// putBack returns an instance (nil: a slot to fill) to the pool, or
// closes it when the Module is closed.
func (m *Module) putBack(inst *instance) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed.Load() {
		if inst != nil {
			inst.close()
		}
		return
	}
	m.pool <- inst // never blocks: the slot came from the pool
}

func (m *Module) errClosed() error {
	return fmt.Errorf("plugin %q: %w", m.cfg.Name, ErrClosed)
}

// Close implements plugin.Conn. It ends calls in flight (they fail with
// ErrClosed at their next deadline check) and releases the instances; the
// compiled code stays in the process for the next Open of the same file
// (Release frees it) and the disk cache stays.
func (m *Module) Close(ctx context.Context) error {
	m.closeOnce.Do(func() {
		m.mu.Lock()
		m.closed.Store(true)
		close(m.done)
		var errs []error
	drain:
		for {
			select {
			case inst := <-m.pool:
				if inst != nil && inst.mod != nil {
					if err := inst.mod.Close(ctx); err != nil {
						errs = append(errs, err)
					}
				}
			default:
				break drain
			}
		}
		m.mu.Unlock()
		if m.compiled != nil {
			m.eng.drop(m.sum, m.compiled)
		}
		m.eng.release()
		if m.http != nil {
			m.http.CloseIdleConnections()
		}
		if err := errors.Join(errs...); err != nil {
			m.closeErr = fmt.Errorf("plugin %q: close: %w", m.cfg.Name, err)
		}
	})
	return m.closeErr
}

// callError is a fault message that still answers errors.Is for the
// conditions callers test (a deadline, a cancellation, a version).
type callError struct {
	msg  string
	errs []error
}

func (e *callError) Error() string   { return e.msg }
func (e *callError) Unwrap() []error { return e.errs }

func newCallError(name, msg string, errs ...error) error {
	return &callError{msg: fmt.Sprintf("plugin %q: %s", name, msg), errs: errs}
}
