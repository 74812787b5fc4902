//go:build unix

package process

import (
	"context"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/sdk"
)

const badframesPkg = "testdata/plugins/badframes"

// TestBadFrames: a plugin that breaks the frame protocol (a huge length,
// garbage, a cut-off answer, a hang) fails the call with one line naming
// the plugin and what it sent, in bounded time and memory; the host then
// carries on, on a new process when the old one is in an unknown state.
func TestBadFrames(t *testing.T) {
	tests := []struct {
		mode    string
		want    string
		restart bool
	}{
		{"ok", "", false},
		{"extra", "", false}, // the answer counts; the connection is not reused
		{"oversized", `^plugin "badframes": gate\.check: response of 4294967280 bytes is over the 64 MiB message limit$`, false},
		{"garbage", `^plugin "badframes": gate\.check: malformed response \(c1 c1 c1\): at byte 0: want a map, got the unused byte 0xc1$`, false},
		{"truncated", `^plugin "badframes": gate\.check: connection lost \(response truncated after 10 of 100 bytes: unexpected EOF, process killed\)$`, true},
		{"shortheader", `^plugin "badframes": gate\.check: connection lost \(unexpected EOF, process killed\)$`, true},
		{"hang", `^plugin "badframes": gate\.check: no answer within 300ms \(process killed\)$`, true},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			p := openPlugin(t, badframesPkg, func(c *Config) { c.CallTimeout = 300 * time.Millisecond }, tt.mode)
			if current(p).fr == nil {
				t.Fatal("the plugin said hello but is called over gRPC")
			}
			info := describe(t, "badframes", p)
			before := p.pid()
			c := plugin.NewClient("badframes", p, info)
			v, err := c.Check(context.Background(), &sdk.Comparison{})
			switch {
			case tt.want == "" && (err != nil || v.Ruling != sdk.Pass):
				t.Fatalf("call: %v %+v", err, v)
			case tt.want != "" && (err == nil || !regexp.MustCompile(tt.want).MatchString(err.Error())):
				t.Fatalf("err = %v\nwant  %s", err, tt.want)
			}
			if tt.restart && !gone(before) {
				t.Fatalf("process %d not killed", before)
			}
			if !tt.restart && p.pid() != before {
				t.Fatalf("process restarted: %d → %d", before, p.pid())
			}
			// Describe is answered correctly in every mode: the host goes on.
			if _, err := plugin.Describe(context.Background(), "badframes", p); err != nil {
				t.Fatalf("describe after the fault: %v", err)
			}
		})
	}
}

// TestFramesConcurrent: concurrent callers get a connection each; a caller
// that gives up closes its own connection only, and the pool keeps the rest.
func TestFramesConcurrent(t *testing.T) {
	p := openPlugin(t, misbehavePkg, nil)
	errs := make(chan error, 16)
	for range 16 {
		go func() {
			_, err := check(context.Background(), p, "ok")
			errs <- err
		}()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	fr := current(p).fr
	fr.mu.Lock()
	idle := len(fr.idle)
	fr.mu.Unlock()
	if idle < 1 || idle > maxIdle {
		t.Fatalf("%d idle connections, want 1..%d", idle, maxIdle)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := check(ctx, p, "ok"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context canceled", err)
	}
	mustOK(t, p)
}
