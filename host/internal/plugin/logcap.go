package plugin

import (
	"context"
	"log/slog"
	"strings"
)

// Bounds on what one output stream of a plugin (stdout or stderr) may put
// into the host log between two flushes, so that a plugin that floods its
// output (a crash dump, an out-of-memory trace, garbage) cannot flood the
// log. Both transports use them: the wasm transport flushes after every
// call, the process transport after every call and every exit.
const (
	// MaxLogLines is the number of lines logged per stream and flush.
	MaxLogLines = 200
	// MaxLogLineSize bounds one logged line, in bytes.
	MaxLogLineSize = 4 << 10
)

// LogCap counts the lines one output stream logged and drops those past
// MaxLogLines until the next Flush, which reports how many it dropped. The
// zero value is ready. It is not safe for concurrent use: the stream's
// writer guards it with its own lock.
type LogCap struct {
	lines, dropped int
}

// Allow reports whether one more line may be logged, counting it either
// way.
func (c *LogCap) Allow() bool {
	if c.lines >= MaxLogLines {
		c.dropped++
		return false
	}
	c.lines++
	return true
}

// Flush logs one warning with the number of lines dropped since the last
// Flush, if any, and starts counting afresh.
func (c *LogCap) Flush(ctx context.Context, log *slog.Logger, stream string) {
	if c.dropped > 0 {
		log.LogAttrs(ctx, slog.LevelWarn, "plugin output dropped",
			slog.String("stream", stream), slog.Int("lines", c.dropped), slog.Int("limit", MaxLogLines))
	}
	c.lines, c.dropped = 0, 0
}

// ClipLine makes one line of plugin output fit for the log: at most
// MaxLogLineSize bytes, no trailing carriage return, valid UTF-8.
func ClipLine(b []byte) string {
	if len(b) > MaxLogLineSize {
		b = b[:MaxLogLineSize]
	}
	return strings.ToValidUTF8(strings.TrimRight(string(b), "\r"), "\uFFFD")
}
