package wasm

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"

	"github.com/sextant-dev/sextant/host/internal/plugin"
)

// A plugin's stdout and stderr go to the host log, per stream and per call
// within plugin.MaxLogLines lines of plugin.MaxLogLineSize bytes (the
// bounds the process transport shares), so garbage output cannot flood it.

// lineWriter turns one of a plugin's output streams into log records, one
// per line. The wasi fd_write host function writes into it on the calling
// goroutine; the mutex only guards against a late write racing a flush.
type lineWriter struct {
	log    *slog.Logger
	stream string // "stdout" or "stderr"

	mu    sync.Mutex
	buf   []byte
	bound plugin.LogCap // lines logged and dropped since the last flush
	// headline is the first line this call that explains a crash of the
	// Go runtime ("panic: …", "fatal error: …"); oom is set when a line
	// reports an exhausted heap.
	headline string
	oom      bool
}

func newLineWriter(log *slog.Logger, stream string) *lineWriter {
	return &lineWriter{log: log, stream: stream}
}

// Write implements io.Writer.
func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.buf = append(w.buf, p...)
			if len(w.buf) > plugin.MaxLogLineSize {
				w.emit(w.buf)
				w.buf = w.buf[:0]
			}
			break
		}
		w.buf = append(w.buf, p[:i]...)
		w.emit(w.buf)
		w.buf = w.buf[:0]
		p = p[i+1:]
	}
	return n, nil
}

func (w *lineWriter) emit(b []byte) {
	line := plugin.ClipLine(b)
	if w.stream == "stderr" {
		if w.headline == "" && (strings.HasPrefix(line, "panic: ") || strings.HasPrefix(line, "fatal error: ")) {
			w.headline = line
		}
		if strings.Contains(line, "out of memory") {
			w.oom = true
		}
	}
	if strings.TrimSpace(line) == "" {
		return
	}
	if !w.bound.Allow() {
		return
	}
	w.log.LogAttrs(context.Background(), slog.LevelInfo, line, slog.String("stream", w.stream))
}

// flush logs a pending partial line and how many lines were dropped, and
// starts counting afresh; the host calls it after every call.
func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit(w.buf)
		w.buf = w.buf[:0]
	}
	w.bound.Flush(context.Background(), w.log, w.stream)
}

// reset forgets what the previous call wrote.
func (w *lineWriter) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.headline, w.oom = "", false
}

// crash returns the headline and the out-of-memory flag of this call.
func (w *lineWriter) crash() (headline string, oom bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.headline, w.oom
}
