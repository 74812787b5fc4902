package process

import (
	"bytes"
	"context"
	"io"
	"log"
	"log/slog"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
)

// hcLogger bridges go-plugin's hclog.Logger to the plugin's slog.Logger so
// nothing of go-plugin reaches the host's stderr. Everything go-plugin says
// about itself is Debug: the transport reports faults on its own, once.
//
// go-plugin also feeds the child's stderr through a logger named after the
// binary; that one is off, because output (ClientConfig.Stderr) handles
// those lines and keeps them for crash reports.
type hcLogger struct {
	log    *slog.Logger
	name   string
	args   []any
	off    bool
	binary string // the base name go-plugin names the stderr logger after
}

var _ hclog.Logger = (*hcLogger)(nil)

func newHCLogger(l *slog.Logger, path string) *hcLogger {
	return &hcLogger{log: l.With("component", "go-plugin"), binary: filepath.Base(path)}
}

func (h *hcLogger) Log(level hclog.Level, msg string, args ...any) {
	if h.off || level == hclog.Off || !h.IsDebug() {
		return
	}
	all := append(append([]any(nil), h.args...), args...)
	if h.name != "" {
		all = append(all, "logger", h.name)
	}
	h.log.Debug(msg, all...)
}

func (h *hcLogger) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *hcLogger) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *hcLogger) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *hcLogger) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *hcLogger) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }

func (h *hcLogger) enabled() bool {
	return !h.off && h.log.Enabled(context.Background(), slog.LevelDebug)
}

func (h *hcLogger) IsTrace() bool { return h.enabled() }
func (h *hcLogger) IsDebug() bool { return h.enabled() }
func (h *hcLogger) IsInfo() bool  { return h.enabled() }
func (h *hcLogger) IsWarn() bool  { return h.enabled() }
func (h *hcLogger) IsError() bool { return h.enabled() }

func (h *hcLogger) ImpliedArgs() []any { return h.args }

func (h *hcLogger) With(args ...any) hclog.Logger {
	c := *h
	c.args = append(append([]any(nil), h.args...), args...)
	return &c
}

func (h *hcLogger) Name() string { return h.name }

func (h *hcLogger) Named(name string) hclog.Logger {
	c := *h
	c.off = h.off || name == h.binary
	if h.name != "" {
		name = h.name + "." + name
	}
	c.name = name
	return &c
}

func (h *hcLogger) ResetNamed(name string) hclog.Logger {
	c := *h
	c.off = name == h.binary
	c.name = name
	return &c
}

func (h *hcLogger) SetLevel(hclog.Level) {}

// GetLevel reports Off for the stderr logger, which makes go-plugin skip
// parsing lines nobody will read.
func (h *hcLogger) GetLevel() hclog.Level {
	if h.off {
		return hclog.Off
	}
	if h.enabled() {
		return hclog.Trace
	}
	return hclog.Error
}

func (h *hcLogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(h.StandardWriter(opts), "", 0)
}

func (h *hcLogger) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return writerFunc(func(b []byte) (int, error) {
		h.Debug(string(bytes.TrimRight(b, "\n")))
		return len(b), nil
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
