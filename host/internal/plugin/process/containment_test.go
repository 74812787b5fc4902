package process

import (
	"context"
	"errors"
	"log/slog"
	"regexp"
	"syscall"
	"testing"
	"time"
)

// TestMisbehave runs each misbehaviour of the misbehave plugin over a real
// process: the call fails with one line naming the plugin and the fault (or
// works, when the fault is harmless), the host survives, and a later "ok"
// call works — on a restarted process when the old one had to go. It runs
// over frames in api 2 and api 1, and over gRPC in api 1 (as a plugin
// that does not serve frames is called).
func TestMisbehave(t *testing.T) {
	for _, v := range []struct {
		name string
		grpc bool
		apis []int
	}{{"frames-api2", false, []int{1, 2}}, {"frames-api1", false, nil}, {"grpc-api1", true, nil}} {
		t.Run(v.name, func(t *testing.T) {
			checkAPIs = v.apis
			defer func() { checkAPIs = nil }()
			misbehave(t, func(c *Config) { c.ForceGRPC = v.grpc })
		})
	}
}

func misbehave(t *testing.T, transport func(*Config)) {
	tests := []struct {
		mode    string
		cfg     func(*Config)
		want    string // regexp for the error; "" = the call succeeds
		is      error  // errors.Is target, if any
		restart bool   // the process is replaced
	}{
		{mode: "loop", cfg: short,
			want: `^plugin "misbehave": gate\.check: no answer within 300ms \(process killed\)$`, is: context.DeadlineExceeded, restart: true},
		{mode: "sleep", cfg: short,
			want: `^plugin "misbehave": gate\.check: no answer within 300ms \(process killed\)$`, is: context.DeadlineExceeded, restart: true},
		{mode: "membomb", cfg: func(c *Config) { c.MemoryLimit = 64 << 20 },
			want: `^plugin "misbehave": out of memory \(limit 64 MiB; raise \[requests\] memory in its plugin\.toml\): process exited \(exit status 2\) during gate\.check$`, is: ErrExited, restart: true},
		{mode: "panic",
			want: `^plugin "misbehave": panicked: misbehave: deliberate panic \[main\.Misbehave\.Check\(.*\) .*/testdata/plugins/misbehave/main\.go:\d+ \+0x[0-9a-f]+\]$`},
		{mode: "panic-goroutine",
			want: `^plugin "misbehave": process exited \(exit status 2\) during gate\.check: panic: misbehave: deliberate panic in a goroutine$`, is: ErrExited, restart: true},
		// The plugin builds and encodes 100 MiB: give it all the time a
		// loaded machine needs, since the size limit is what is proven.
		{mode: "bigoutput", cfg: func(c *Config) { c.CallTimeout = 5 * time.Minute },
			want: `^plugin "misbehave": gate\.check: response of 1048576\d\d bytes is over the 64 MiB message limit$`},
		{mode: "crash",
			want: `^plugin "misbehave": process exited \(exit status 3\) during gate\.check$`, is: ErrExited, restart: true},
		{mode: "stdout"},
		{mode: "stderr"},
		{mode: "readfile"}, // trusted native code: not sandboxed, only contained
		{mode: "no-such-mode", want: `^plugin "misbehave": unknown mode "no-such-mode"$`},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			p := openPlugin(t, misbehavePkg, func(c *Config) {
				transport(c)
				if tt.cfg != nil {
					tt.cfg(c)
				}
			})
			if frames := current(p).fr != nil; frames == p.cfg.ForceGRPC {
				t.Fatalf("frames %v with ForceGRPC %v", frames, p.cfg.ForceGRPC)
			}
			before := p.pid()
			_, err := check(context.Background(), p, tt.mode)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("call failed: %v", err)
			case tt.want != "" && err == nil:
				t.Fatalf("call succeeded, want %s", tt.want)
			case tt.want != "" && !regexp.MustCompile(tt.want).MatchString(err.Error()):
				t.Fatalf("err = %s\nwant  %s", err, tt.want)
			case tt.is != nil && !errors.Is(err, tt.is):
				t.Fatalf("errors.Is(%v, %v) = false", err, tt.is)
			}
			if tt.restart {
				if !gone(before) {
					t.Fatalf("old process %d still alive", before)
				}
			}
			// The fault is proven; the next call must not race a short
			// deadline on a loaded machine.
			p.cfg.CallTimeout = time.Minute
			mustOK(t, p)
			if after := p.pid(); (after != before) != tt.restart {
				t.Fatalf("pid %d → %d, want restart=%v", before, after, tt.restart)
			}
		})
	}
}

func short(c *Config) { c.CallTimeout = 300 * time.Millisecond }

// TestGiveUp: restarts are bounded; once MaxRestarts restarts in a row have
// failed, the plugin stays down and says so.
func TestGiveUp(t *testing.T) {
	p := openPlugin(t, misbehavePkg, func(c *Config) { c.MaxRestarts = 2 })
	crash := `^plugin "misbehave": process exited \(exit status 3\) during gate\.check$`
	for i := range 3 { // the first process, then two restarts
		if _, err := check(context.Background(), p, "crash"); err == nil || !regexp.MustCompile(crash).MatchString(err.Error()) {
			t.Fatalf("crash %d: err = %v", i, err)
		}
	}
	_, err := check(context.Background(), p, "ok")
	want := `plugin "misbehave": gave up after 2 restarts (last fault: process exited (exit status 3) during gate.check)`
	if err == nil || err.Error() != want || !errors.Is(err, ErrGaveUp) {
		t.Fatalf("err = %v\nwant  %s", err, want)
	}
}

// TestRestartBudgetResets: a successful call forgives earlier faults, so a
// plugin that crashes now and then is not given up on.
func TestRestartBudgetResets(t *testing.T) {
	p := openPlugin(t, misbehavePkg, func(c *Config) { c.MaxRestarts = 1 })
	for i := range 3 {
		if _, err := check(context.Background(), p, "crash"); !errors.Is(err, ErrExited) {
			t.Fatalf("crash %d: err = %v", i, err)
		}
		mustOK(t, p)
	}
}

// TestCrashBetweenCalls: a process that dies while idle is restarted by the
// next call, which succeeds.
func TestCrashBetweenCalls(t *testing.T) {
	recs := newRecords()
	p := openPlugin(t, misbehavePkg, func(c *Config) { c.Logger = slog.New(recs) })
	before := p.pid()
	if err := syscall.Kill(before, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Wait until the transport has reaped it: a call made between the death
	// and the reaping is a call on a dead process, and fails as one.
	for deadline := time.Now().Add(10 * time.Second); !current(p).exited(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("not reaped")
		}
	}
	mustOK(t, p)
	if p.pid() == before {
		t.Fatal("not restarted")
	}
	if _, ok := recs.find("plugin fault", map[string]string{"plugin": "misbehave", "fault": "process exited (signal: killed) between calls"}); !ok {
		t.Fatal("the fault was not logged")
	}
}

// TestCallerCancel: a caller that gives up cancels the call; the process is
// not blamed, not killed, and answers the next call.
func TestCallerCancel(t *testing.T) {
	p := openPlugin(t, misbehavePkg, nil)
	before := p.pid()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	_, err := check(ctx, p, "sleep")
	if want := `plugin "misbehave": gate.check: context canceled`; err == nil || err.Error() != want || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want %s", err, want)
	}
	mustOK(t, p)
	if p.pid() != before {
		t.Fatal("restarted after a cancellation")
	}
}

// TestCallerDeadline: a call that outlives the caller's own deadline is
// treated like one that outlives CallTimeout: the process is killed.
func TestCallerDeadline(t *testing.T) {
	p := openPlugin(t, misbehavePkg, nil)
	before := p.pid()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := check(ctx, p, "sleep")
	if want := `plugin "misbehave": gate.check: context deadline exceeded (process killed)`; err == nil || err.Error() != want || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want %s", err, want)
	}
	if !gone(before) {
		t.Fatal("sleeping process not killed")
	}
	mustOK(t, p)
}

// TestCloseDuringCall: a call in flight when the plugin is closed says so,
// rather than blaming the plugin for exiting.
func TestCloseDuringCall(t *testing.T) {
	p := openPlugin(t, misbehavePkg, nil)
	errs := make(chan error, 1)
	go func() {
		_, err := check(context.Background(), p, "sleep")
		errs <- err
	}()
	time.Sleep(500 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	p.Close(ctx)
	err := <-errs
	// "closed" alone if a loaded machine ran Close before the call started.
	if want := `^plugin "misbehave": closed( during gate\.check)?$`; err == nil || !regexp.MustCompile(want).MatchString(err.Error()) || !errors.Is(err, ErrClosed) {
		t.Fatalf("err = %v, want %s", err, want)
	}
}

// current returns the running child, if any.
func current(p *Plugin) *instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur
}

// TestConcurrentCalls: calls share one process; a crash in one of them
// fails only the calls in flight on that process.
func TestConcurrentCalls(t *testing.T) {
	p := openPlugin(t, misbehavePkg, nil)
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			_, err := check(context.Background(), p, "ok")
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestStderrLogged: the child's stderr is logged under the plugin's name.
func TestStderrLogged(t *testing.T) {
	recs := newRecords()
	p := openPlugin(t, misbehavePkg, func(c *Config) { c.Logger = slog.New(recs) })
	if _, err := check(context.Background(), p, "stderr"); err != nil {
		t.Fatal(err)
	}
	// The line crosses go-plugin's stdio stream asynchronously.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, ok := recs.find("plugin stderr", map[string]string{"plugin": "misbehave", "line": "misbehave: a line on stderr"}); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("stderr line not logged")
		}
	}
	// A crash's last words are logged at error level too.
	if _, err := check(context.Background(), p, "panic-goroutine"); err == nil {
		t.Fatal("panic-goroutine succeeded")
	}
	r, ok := recs.find("plugin stderr", map[string]string{"plugin": "misbehave", "line": "panic: misbehave: deliberate panic in a goroutine"})
	if !ok || r.Level != slog.LevelError {
		t.Fatalf("panic line not logged at error (found %v, level %v)", ok, r.Level)
	}
}

// TestClose: Close ends the process; calls after it fail.
func TestClose(t *testing.T) {
	p := openPlugin(t, misbehavePkg, nil)
	pid := p.pid()
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !gone(pid) {
		t.Fatalf("process %d outlived Close", pid)
	}
	_, err := p.RoundTrip(context.Background(), []byte(`{}`))
	if want := `plugin "misbehave": closed`; err == nil || err.Error() != want || !errors.Is(err, ErrClosed) {
		t.Fatalf("err = %v, want %s", err, want)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	// A wedged process is killed when Close's context ends.
	p = openPlugin(t, misbehavePkg, nil)
	pid = p.pid()
	go check(context.Background(), p, "loop")
	time.Sleep(100 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	p.Close(ctx)
	if !gone(pid) {
		t.Fatalf("looping process %d outlived Close", pid)
	}
}
