// Package process is the process transport: it runs a trusted native plugin
// as a hashicorp/go-plugin subprocess and carries wire envelopes to it
// through plugin.Conn — as length-prefixed frames on a private unix socket
// when the plugin serves them (the SDK's plugins do), else over go-plugin's
// gRPC connection (package sdk/rpc, PROTOCOL-process.md).
//
// Process plugins are trusted code, as Terraform providers are, but the host
// must outlive them. So the package verifies the binary's sha256 before exec,
// scrubs the environment to an allow-list, bounds the child's memory, puts
// every call under a deadline, logs the child's stderr under the plugin's
// name, restarts a crashed child with bounded exponential backoff, and makes
// sure no child outlives the host. Every failure is one line that names the
// plugin and what it did. See PROTOCOL-process.md in package sdk for the wire
// side, and RATIONALE.md beside this file for the why of each mechanism.
//
// The package must not interpret envelopes beyond reading the method name
// for error messages: typing calls is plugin.Client's job.
package process

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/sdk/rpc"
)

// Config says how to run one process plugin. Open copies it; changing the
// caller's value afterwards has no effect.
type Config struct {
	// Name is the plugin's name; every error and log line carries it.
	Name string
	// Command is the argv; Command[0] is the binary. A relative path with a
	// slash is taken relative to Dir; a bare name is looked up in $PATH.
	Command []string
	// Dir is the child's working directory ("" = the host's).
	Dir string
	// SHA256 is the expected hex sha256 of the binary; "" skips the check.
	SHA256 string
	// EnvAllow names the host variables passed through to the child. nil
	// means DefaultEnvAllow; an empty non-nil slice passes none.
	EnvAllow []string
	// Env holds extra KEY=VALUE pairs the host adds.
	Env []string
	// CallTimeout bounds each call (default 30s). A plugin that has not
	// answered by then is killed and restarted on the next call.
	CallTimeout time.Duration
	// StartTimeout bounds start-up up to the go-plugin handshake line
	// (default 30s).
	StartTimeout time.Duration
	// MaxRestarts bounds consecutive restarts without a successful call in
	// between (0 = default 3, negative = never restart).
	MaxRestarts int
	// Backoff is the delay before the first restart, doubled for each
	// further consecutive restart and capped at MaxBackoff (default 100ms).
	Backoff time.Duration
	// MemoryLimit is the memory the plugin may use, in bytes (0 = default
	// 1 GiB, negative = no limit) — a manifest's [requests] memory. The
	// child's data segment (RLIMIT_DATA) is capped at MemoryLimit plus
	// RuntimeAllowance(): a language runtime reserves writable address
	// space it never touches (RATIONALE.md). Linux only.
	MemoryLimit int64
	// Logger receives the child's stderr and the transport's own events,
	// scoped with plugin=Name (default slog.Default()).
	Logger *slog.Logger
	// ForceGRPC carries calls over go-plugin's gRPC connection even when
	// the plugin serves frames (PROTOCOL-process.md, "Frames"), as they
	// are carried to a plugin that does not: for debugging, and to test
	// that path with a Go plugin.
	ForceGRPC bool
}

// Defaults applied by Open.
const (
	DefaultCallTimeout  = 30 * time.Second
	DefaultStartTimeout = 30 * time.Second
	DefaultMaxRestarts  = 3
	DefaultBackoff      = 100 * time.Millisecond
	DefaultMemoryLimit  = 1 << 30
	// MaxBackoff caps the doubled restart delay.
	MaxBackoff = 10 * time.Second
)

// RuntimeAllowance is what the process transport adds to MemoryLimit for
// RLIMIT_DATA: room for the address space a language runtime reserves
// writable but hardly touches — a Go runtime's heap arena index and 8 MiB of
// stack for each OS thread, whose number grows with the CPUs. Measured on 2
// CPUs, a Go plugin cannot start under 96 MiB and starts under 128 MiB, so
// a request that is a fine heap for a wasm build ("64MiB") is one for a
// native build too.
func RuntimeAllowance() int64 { return 128<<20 + int64(runtime.NumCPU())*8<<20 }

// DefaultEnvAllow is the environment a process plugin sees when
// Config.EnvAllow is nil: enough to find programs, a home and a temp
// directory, and to format text and times — and no credentials.
var DefaultEnvAllow = []string{"PATH", "HOME", "TMPDIR", "LANG", "TZ"}

// Conditions callers can test with errors.Is. Deadlines and cancellations
// wrap context.DeadlineExceeded and context.Canceled.
var (
	// ErrChecksum: the binary's sha256 is not the expected one; it was not run.
	ErrChecksum = errors.New("sha256 mismatch")
	// ErrExited: the process died, during a call or before the handshake.
	ErrExited = errors.New("plugin process exited")
	// ErrGaveUp: the plugin failed MaxRestarts times in a row; it stays down.
	ErrGaveUp = errors.New("gave up restarting")
	// ErrClosed: the plugin was closed.
	ErrClosed = errors.New("plugin closed")
)

// Plugin is one process plugin: the running child (or none, after a fault)
// and the restart bookkeeping. It is safe for concurrent use; calls run
// concurrently on one child.
type Plugin struct {
	cfg  Config
	path string // resolved Command[0]
	log  *slog.Logger

	// sem serialises starting a child; a channel so waiting honours ctx.
	sem chan struct{}

	mu        sync.Mutex
	cur       *instance // nil after a fault until the next call restarts it
	closed    bool
	restarts  int // consecutive restarts without a successful call
	lastFault string
	faultAt   time.Time
}

var _ plugin.Conn = (*Plugin)(nil)

// Open verifies, starts and handshakes the plugin described by cfg. A
// failure (bad config, checksum mismatch, exec error, garbage instead of the
// handshake) returns one line naming the plugin; nothing is left running.
//
// # Notes
//
//   - Open does not call describe: the caller asks (plugin.Describe) and
//     decides about the api version and kind.
//   - The child is started from a dedicated OS thread so that Linux's
//     parent-death signal fires when the host process dies, not when some
//     thread of it does (go.dev/issue/27505).
func Open(ctx context.Context, cfg Config) (*Plugin, error) {
	cfg, path, err := normalize(cfg)
	if err != nil {
		return nil, err
	}
	p := &Plugin{
		cfg:  cfg,
		path: path,
		log:  cfg.Logger.With("plugin", cfg.Name),
		sem:  make(chan struct{}, 1),
	}
	in, err := p.start(ctx)
	if err != nil {
		return nil, err
	}
	p.cur = in
	return p, nil
}

func normalize(cfg Config) (Config, string, error) {
	if cfg.Name == "" {
		return cfg, "", errors.New("process plugin: empty name")
	}
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		return cfg, "", fmt.Errorf("plugin %q: empty command", cfg.Name)
	}
	if cfg.SHA256 != "" {
		if b, err := hex.DecodeString(cfg.SHA256); err != nil || len(b) != 32 {
			return cfg, "", fmt.Errorf("plugin %q: sha256: want 64 hex digits, got %q", cfg.Name, cfg.SHA256)
		}
		cfg.SHA256 = strings.ToLower(cfg.SHA256)
	}
	cfg.Command = append([]string(nil), cfg.Command...)
	if cfg.EnvAllow == nil {
		cfg.EnvAllow = DefaultEnvAllow
	}
	cfg.EnvAllow = append([]string(nil), cfg.EnvAllow...)
	cfg.Env = append([]string(nil), cfg.Env...)
	for _, kv := range cfg.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return cfg, "", fmt.Errorf("plugin %q: env: want KEY=VALUE, got %q", cfg.Name, kv)
		}
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	switch {
	case cfg.MaxRestarts == 0:
		cfg.MaxRestarts = DefaultMaxRestarts
	case cfg.MaxRestarts < 0:
		cfg.MaxRestarts = 0
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.MemoryLimit == 0 {
		cfg.MemoryLimit = DefaultMemoryLimit
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}

	path := cfg.Command[0]
	switch {
	case filepath.IsAbs(path):
	case strings.ContainsRune(path, filepath.Separator):
		// exec would resolve it against Dir, the checksum against the
		// host's working directory: make both look at the same file.
		if cfg.Dir != "" {
			path = filepath.Join(cfg.Dir, path)
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return cfg, "", fmt.Errorf("plugin %q: command %q: %w", cfg.Name, cfg.Command[0], err)
		}
		path = abs
	default:
		found, err := exec.LookPath(path)
		if err != nil {
			return cfg, "", fmt.Errorf("plugin %q: command: %w", cfg.Name, err)
		}
		path = found
	}
	return cfg, path, nil
}

// maxRequest leaves room for the protobuf wrapper around the envelope.
const maxRequest = rpc.MaxMessage - 16

// RoundTrip implements plugin.Conn. It restarts the child first if an
// earlier fault took it down (waiting out the backoff), then calls it under
// min(ctx's deadline, CallTimeout).
func (p *Plugin) RoundTrip(ctx context.Context, request []byte) ([]byte, error) {
	if len(request) > maxRequest {
		return nil, p.errorf(nil, "%s: request of %d bytes is over the %s message limit",
			method(request), len(request), size(rpc.MaxMessage))
	}
	in, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	if in.fr != nil {
		return p.frameRoundTrip(ctx, in, request)
	}
	cctx, cancel := context.WithTimeout(ctx, p.cfg.CallTimeout)
	defer cancel()
	defer in.out.flush()
	resp, err := in.rpc.RoundTrip(cctx, request)
	if err == nil {
		p.succeeded(in)
		return resp, nil
	}
	return nil, p.callFault(ctx, cctx, in, request, err)
}

// acquire returns a live child, starting one if there is none.
func (p *Plugin) acquire(ctx context.Context) (*instance, error) {
	p.mu.Lock()
	in := p.cur
	p.mu.Unlock()
	if in != nil && !in.exited() {
		return in, nil // the common case: no need to queue behind a restart
	}
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, p.errorf(ctx.Err(), "%v", ctx.Err())
	}
	defer func() { <-p.sem }()

	p.mu.Lock()
	closed := p.closed
	in = p.cur
	p.mu.Unlock()
	if closed {
		return nil, p.errorf(ErrClosed, "closed")
	}
	if in != nil {
		if !in.exited() {
			return in, nil
		}
		// Died while idle: nobody's call failed, so say it in the log and
		// restart it for this call.
		fault := in.exitFault() + " between calls"
		p.log.Warn("plugin fault", "fault", fault)
		p.retire(in, fault)
	}

	p.mu.Lock()
	n, last, at := p.restarts, p.lastFault, p.faultAt
	p.mu.Unlock()
	if n >= p.cfg.MaxRestarts {
		return nil, p.errorf(ErrGaveUp, "gave up after %d restarts (last fault: %s)", n, last)
	}
	if wait := time.Until(at.Add(p.backoff(n))); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, p.errorf(ctx.Err(), "restart: %v", ctx.Err())
		}
	}
	p.log.Info("restarting plugin", "restart", n+1, "last_fault", last)
	in, err := p.start(ctx)

	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil { // the caller gave up, not the plugin
			p.restarts++
			p.lastFault = strings.TrimPrefix(err.Error(), fmt.Sprintf("plugin %q: ", p.cfg.Name))
			p.faultAt = time.Now()
		}
		return nil, err
	}
	p.restarts++
	if p.closed {
		in.kill()
		return nil, p.errorf(ErrClosed, "closed")
	}
	p.cur = in
	return in, nil
}

func (p *Plugin) backoff(n int) time.Duration {
	d := p.cfg.Backoff
	for i := 0; i < n && d < MaxBackoff; i++ {
		d *= 2
	}
	return min(d, MaxBackoff)
}

// succeeded resets the restart budget once a child has answered.
func (p *Plugin) succeeded(in *instance) {
	p.mu.Lock()
	if p.cur == in {
		p.restarts = 0
	}
	p.mu.Unlock()
}

// retire kills in and, if it is the current child, records fault so the
// next call restarts it.
func (p *Plugin) retire(in *instance, fault string) {
	p.mu.Lock()
	if p.cur == in {
		p.cur = nil
		p.lastFault = fault
		p.faultAt = time.Now()
	}
	p.mu.Unlock()
	in.kill()
}

// Close stops the child: gracefully (go-plugin's Kill, which asks the
// plugin to shut down and kills it after two seconds), or at once when ctx
// ends first. Close is idempotent; calls after it fail with ErrClosed.
func (p *Plugin) Close(ctx context.Context) error {
	p.mu.Lock()
	in := p.cur
	p.cur = nil
	p.closed = true
	p.mu.Unlock()
	if in == nil {
		return nil
	}
	if in.fr != nil {
		in.fr.close() // calls in flight fail now, and say "closed"
	}
	done := make(chan struct{})
	go func() {
		in.client.Kill()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		in.kill()
		<-done
	}
	return nil
}

// PID returns the process id of the running child, or 0 when there is
// none (before a restart), for diagnostics.
func (p *Plugin) PID() int { return p.pid() }

// pid returns the current child's process id, or 0 when there is none.
func (p *Plugin) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur == nil {
		return 0
	}
	return p.cur.run.pid
}

// transportError is a failure of the transport: one line naming the plugin
// and the fault, and a cause for errors.Is.
type transportError struct {
	msg   string
	cause error
}

func (e *transportError) Error() string { return e.msg }
func (e *transportError) Unwrap() error { return e.cause }

func (p *Plugin) errorf(cause error, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return &transportError{msg: fmt.Sprintf("plugin %q: %s", p.cfg.Name, oneLine(msg)), cause: cause}
}

// oneLine folds a multi-line message into one line.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	var parts []string
	for _, l := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "; ")
}

// size formats a byte count for messages.
func size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
