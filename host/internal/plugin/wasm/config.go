package wasm

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"
)

// The defaults and ceilings of a Config.
const (
	// DefaultMemoryLimit bounds a plugin instance's linear memory.
	DefaultMemoryLimit = 64 << 20
	// DefaultCallTimeout bounds one call (DESIGN §3.4).
	DefaultCallTimeout = 5 * time.Second
	// MaxMessage bounds a request or a response envelope. A plugin that
	// answers with more fails the call; the host never copies it.
	MaxMessage = 16 << 20

	pageSize = 64 << 10
	maxPages = 1 << 16 // wasm32: 4 GiB
)

// Config says which module to open and how to confine it. The zero value
// of every optional field picks the documented default. Open copies and
// validates it once; a Module never sees later changes.
type Config struct {
	// Name is the plugin's name. Errors and log lines carry it.
	Name string
	// Path is the .wasm file.
	Path string
	// SHA256 is the hex digest the manifest promises for Path. The file is
	// checked before it is compiled; "" skips the check.
	SHA256 string
	// CacheDir holds compiled machine code across processes; "" keeps the
	// compiled code in memory only.
	CacheDir string
	// MemoryLimit bounds each instance's linear memory, in bytes (rounded
	// down to whole 64 KiB pages). Default DefaultMemoryLimit.
	MemoryLimit uint64
	// CallTimeout bounds each call, on top of the caller's context.
	// Default DefaultCallTimeout.
	CallTimeout time.Duration
	// Pool is the number of instances, and so of calls that run at once.
	// An instance runs one call at a time. Default 1.
	Pool int
	// AllowHTTP lists the "host:port" pairs the pipeline granted to the
	// plugin's http host function. Everything else is refused.
	AllowHTTP []string
	// Credentials maps credential names to secrets the http host function
	// may put into request headers when the plugin asks for them by name
	// (sdk.HeaderCredential). They stay on the host: the guest never reads
	// them, and the host masks them in the responses it hands over.
	Credentials map[string]string
	// Logger receives the plugin's log calls and its stdout and stderr
	// lines, under the attribute plugin=Name. Default slog.Default().
	Logger *slog.Logger

	// Clock, when set, is the wall clock the plugin reads; replay passes a
	// fixed one. The monotonic clock (durations, sleeps) stays real.
	// Default time.Now.
	Clock func() time.Time
	// Rand, when set, is the plugin's source of random bytes; replay
	// passes a seeded one. It must be safe for concurrent use when Pool > 1.
	// Default crypto/rand.
	Rand io.Reader
}

// normalize fills in defaults and reports every problem with c.
func (c Config) normalize() (Config, error) {
	var errs []string
	if c.Name == "" {
		errs = append(errs, "empty plugin name")
	}
	if c.Path == "" {
		errs = append(errs, "empty module path")
	}
	if c.SHA256 != "" && !isHexDigest(c.SHA256) {
		errs = append(errs, fmt.Sprintf("sha256 %q is not 64 hex digits", c.SHA256))
	}
	if c.MemoryLimit == 0 {
		c.MemoryLimit = DefaultMemoryLimit
	}
	if c.MemoryLimit < pageSize || c.MemoryLimit > maxPages*pageSize {
		errs = append(errs, fmt.Sprintf("memory limit %d bytes is outside 64 KiB..4 GiB", c.MemoryLimit))
	}
	c.MemoryLimit -= c.MemoryLimit % pageSize
	if c.CallTimeout == 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.CallTimeout < 0 {
		errs = append(errs, fmt.Sprintf("negative call timeout %s", c.CallTimeout))
	}
	if c.Pool == 0 {
		c.Pool = 1
	}
	if c.Pool < 0 {
		errs = append(errs, fmt.Sprintf("negative pool size %d", c.Pool))
	}
	allow := make([]string, 0, len(c.AllowHTTP))
	for _, hp := range c.AllowHTTP {
		host, port, err := net.SplitHostPort(hp)
		if err != nil || host == "" || port == "" {
			errs = append(errs, fmt.Sprintf("allow_http %q: want host:port", hp))
			continue
		}
		allow = append(allow, net.JoinHostPort(strings.ToLower(host), port))
	}
	c.AllowHTTP = allow
	creds := make(map[string]string, len(c.Credentials))
	for k, v := range c.Credentials {
		if k == "" || v == "" {
			errs = append(errs, fmt.Sprintf("credential %q: empty name or secret", k))
			continue
		}
		creds[k] = v
	}
	c.Credentials = creds
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if len(errs) > 0 {
		return c, fmt.Errorf("plugin %q: %s", c.Name, strings.Join(errs, "; "))
	}
	return c, nil
}

func isHexDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return false
		}
	}
	return true
}

// sizeString renders a byte count the way limits are written: "64 MiB".
func sizeString(n uint64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
