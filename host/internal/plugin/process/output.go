package process

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/sextant-dev/sextant/host/internal/plugin"
)

// output takes a child's stderr line by line: it logs each line under the
// plugin's name and keeps what is needed to say why the child died.
type output struct {
	log     *slog.Logger
	limited bool // a memory limit is in force

	mu      sync.Mutex
	cap     plugin.LogCap // the shared per-stream cap on logged lines
	first   string        // first plain line (why a child failed before the handshake)
	crash   string        // first line of a crash report (crashRE)
	sawOOM  bool
	inPanic bool

	eof     chan struct{} // closed when the raw stderr pipe reaches EOF
	eofOnce sync.Once
}

func newOutput(log *slog.Logger, limited bool) *output {
	return &output{log: log, limited: limited, eof: make(chan struct{})}
}

// raw is the writer for the child's own fd 2 (go-plugin's
// ClientConfig.Stderr): runtime panics, a crash's last words, plain logs.
func (o *output) raw() io.Writer { return &lineWriter{o: o} }

// synced is the writer for os.Stderr once a Go plugin serves (go-plugin's
// SyncStderr): what the plugin's code prints to os.Stderr.
func (o *output) synced() io.Writer { return &lineWriter{o: o} }

// maxLine bounds one logged line; the rest of a longer one is dropped.
const maxLine = plugin.MaxLogLineSize

type lineWriter struct {
	o   *output
	buf []byte
}

func (w *lineWriter) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if room := maxLine - len(w.buf); room > 0 {
				w.buf = append(w.buf, b[:min(room, len(b))]...)
			}
			break
		}
		if room := maxLine - len(w.buf); room > 0 {
			w.buf = append(w.buf, b[:min(room, i)]...)
		}
		w.o.line(string(w.buf))
		w.buf = w.buf[:0]
		b = b[i+1:]
	}
	return n, nil
}

var (
	// crashRE matches the first line of a runtime's crash report: Go's
	// panics, fatal errors and signal deaths, cgo's aborts.
	crashRE = regexp.MustCompile(`^(panic: |fatal error: |SIG[A-Z]+: |runtime/cgo: )`)
	// oomRE matches an allocation failure in Go, C, C++ or Python.
	oomRE = regexp.MustCompile(`(?i)\bout of memory\b|cannot allocate memory|std::bad_alloc|^MemoryError\b`)
	// threadRE matches a failure to create a thread. Under RLIMIT_DATA that
	// is the stack mmap failing (glibc reports ENOMEM as EAGAIN), so with a
	// memory limit in force it counts as out of memory.
	threadRE = regexp.MustCompile(`pthread_create failed: Resource temporarily unavailable|failed to create new OS thread .*errno=1[12]\b`)
)

func (o *output) line(l string) {
	l = strings.TrimRight(l, "\r")
	if level, msg, args, ok := hclogLine(l); ok {
		// go-plugin's server logging (JSON): its internals, or a plugin
		// that logs through hclog.
		o.log.Log(context.Background(), level, msg, args...)
		return
	}
	o.mu.Lock()
	if crashRE.MatchString(l) {
		o.inPanic = true
		if o.crash == "" {
			o.crash = l
		}
	}
	if oomRE.MatchString(l) || (o.limited && threadRE.MatchString(l)) {
		o.sawOOM = true
	}
	if o.first == "" && strings.TrimSpace(l) != "" {
		o.first = l
	}
	level := slog.LevelInfo
	if o.inPanic {
		level = slog.LevelError
	}
	if strings.TrimSpace(l) == "" {
		o.mu.Unlock()
		return
	}
	if !o.cap.Allow() {
		o.mu.Unlock()
		return
	}
	o.mu.Unlock()
	o.log.Log(context.Background(), level, "plugin stderr", "line", l)
}

// flush says how many lines the cap dropped since the last flush, in one
// warning, and starts counting afresh; the transport calls it after every
// call and when a child has died.
func (o *output) flush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.cap.Flush(context.Background(), o.log, "stderr")
}

// hclogLine recognises an hclog JSON line and maps it to slog.
func hclogLine(l string) (slog.Level, string, []any, bool) {
	if !strings.HasPrefix(l, "{") || !strings.Contains(l, `"@message"`) {
		return 0, "", nil, false
	}
	var m map[string]any
	if json.Unmarshal([]byte(l), &m) != nil {
		return 0, "", nil, false
	}
	msg, _ := m["@message"].(string)
	lvl, _ := m["@level"].(string)
	level := slog.LevelDebug
	switch lvl {
	case "info":
		level = slog.LevelInfo
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	}
	var args []any
	for k, v := range m {
		if !strings.HasPrefix(k, "@") {
			args = append(args, k, v)
		}
	}
	return level, msg, args, true
}

// crashLine is the runtime's account of a crash, cut to one short line.
func (o *output) crashLine() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return cut(o.crash, 200)
}

// lastWords is what the child said before it died at start-up.
func (o *output) lastWords() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.crash != "" {
		return cut(o.crash, 200)
	}
	return cut(o.first, 200)
}

func (o *output) oom() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.sawOOM
}

// watchEOF wraps the raw stderr pipe so that waitEOF knows when go-plugin
// has read (and so written to raw) every line of it.
func (o *output) watchEOF(r io.ReadCloser) io.ReadCloser { return &eofReader{ReadCloser: r, o: o} }

func (o *output) waitEOF(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-o.eof:
	case <-t.C:
	}
}

type eofReader struct {
	io.ReadCloser
	o *output
}

func (r *eofReader) Read(b []byte) (int, error) {
	n, err := r.ReadCloser.Read(b)
	if err != nil {
		r.o.eofOnce.Do(func() { close(r.o.eof) })
	}
	return n, err
}

func cut(s string, n int) string {
	s = strings.ToValidUTF8(s, "?")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
