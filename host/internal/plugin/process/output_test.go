package process

import (
	"github.com/sextant-dev/sextant/host/internal/plugin"

	"context"
	"log/slog"
	"testing"
)

// TestStderrCap: a plugin that writes a thousand stderr lines and dies logs
// the first 200 of them and one warning with the number dropped, as the
// wasm transport does; the call's error still says how it died.
func TestStderrCap(t *testing.T) {
	recs := newRecords()
	p := openPlugin(t, misbehavePkg, func(c *Config) { c.Logger = slog.New(recs); c.MaxRestarts = -1 })
	_, err := check(context.Background(), p, "flood-crash")
	if want := `plugin "misbehave": process exited (exit status 3) during gate.check`; err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
	var lines, warnings int
	var dropped int64
	recs.s.mu.Lock()
	for _, r := range recs.s.all {
		switch r.Message {
		case "plugin stderr":
			lines++
		case "plugin output dropped":
			warnings++
			r.Attrs(func(a slog.Attr) bool {
				if a.Key == "lines" {
					dropped = a.Value.Int64()
				}
				return true
			})
		}
	}
	recs.s.mu.Unlock()
	if lines != plugin.MaxLogLines || warnings != 1 || dropped != 1000-plugin.MaxLogLines {
		t.Fatalf("%d stderr lines logged, %d drop warnings (%d dropped); want %d, 1 (%d)", lines, warnings, dropped, plugin.MaxLogLines, 1000-plugin.MaxLogLines)
	}
}
