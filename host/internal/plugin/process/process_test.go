package process

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/plugintest"
	"github.com/sextant-dev/sextant/sdk"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		helperHost() // never returns
	}
	code := m.Run()
	plugintest.Cleanup()
	os.Exit(code)
}

const (
	thresholdPkg = "testdata/plugins/threshold-gate"
	echoPkg      = "testdata/plugins/echo-provider"
	misbehavePkg = "testdata/plugins/misbehave"
)

// records is a slog.Handler that keeps every record, for assertions.
type records struct {
	attrs []slog.Attr
	s     *store
}

type store struct {
	mu  sync.Mutex
	all []slog.Record
}

func newRecords() *records { return &records{s: new(store)} }

func (h *records) Enabled(context.Context, slog.Level) bool { return true }
func (h *records) Handle(_ context.Context, r slog.Record) error {
	r = r.Clone()
	r.AddAttrs(h.attrs...)
	h.s.mu.Lock()
	h.s.all = append(h.s.all, r)
	h.s.mu.Unlock()
	return nil
}
func (h *records) WithAttrs(as []slog.Attr) slog.Handler {
	return &records{attrs: append(append([]slog.Attr(nil), h.attrs...), as...), s: h.s}
}
func (h *records) WithGroup(string) slog.Handler { return h }

// find returns the first record with message msg whose attrs include all of want.
func (h *records) find(msg string, want map[string]string) (slog.Record, bool) {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	for _, r := range h.s.all {
		if r.Message != msg {
			continue
		}
		got := map[string]string{}
		r.Attrs(func(a slog.Attr) bool { got[a.Key] = a.Value.String(); return true })
		ok := true
		for k, v := range want {
			if got[k] != v {
				ok = false
			}
		}
		if ok {
			return r, true
		}
	}
	return slog.Record{}, false
}

// quietLogger drops everything but keeps the transport's debug paths live.
func quietLogger() *slog.Logger { return slog.New(newRecords()) }

// openPlugin builds pkg, opens it with the test defaults and mut applied, and
// closes it when the test ends.
func openPlugin(t *testing.T, pkg string, mut func(*Config), args ...string) *Plugin {
	t.Helper()
	bin := plugintest.Native(t, pkg)
	cfg := Config{
		Name:        filepath.Base(pkg),
		Command:     append([]string{bin}, args...),
		CallTimeout: 10 * time.Second,
		Backoff:     10 * time.Millisecond,
		Logger:      quietLogger(),
	}
	if mut != nil {
		mut(&cfg)
	}
	p, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

func describe(t *testing.T, name string, p *Plugin) sdk.Info {
	t.Helper()
	info, err := plugin.Describe(context.Background(), name, p)
	if err != nil {
		t.Fatalf("describe: %v", err)
	}
	return info
}

// TestThresholdGateParity: the proof gate answers over a real process what
// its Check computes in-process (the expected values below are its rules
// applied by hand: pass when ci_low >= min_effect, fail when ci_high <
// min_effect, review otherwise).
func TestThresholdGateParity(t *testing.T) {
	p := openPlugin(t, thresholdPkg, nil)
	info := describe(t, "threshold-gate", p)
	if err := sdk.CheckInfo(info); err != nil {
		t.Fatalf("CheckInfo: %v", err)
	}
	if info.Name != "threshold-gate" || info.Kind != sdk.KindGate || info.Version != "0.2.0" || len(info.Config) != 2 {
		t.Fatalf("describe = %+v", info)
	}
	gate := plugin.NewClient("threshold-gate", p, info)
	metric := func(effect, lo, hi float64) []sdk.Metric {
		return []sdk.Metric{{Name: "success_rate", Kind: "binary", Effect: effect, CILow: lo, CIHigh: hi}}
	}
	tests := []struct {
		name    string
		c       sdk.Comparison
		want    *sdk.Verdict
		wantErr string
	}{
		{"pass", sdk.Comparison{Config: map[string]any{"min_effect": 0.0}, Metrics: metric(0.1, 0.05, 0.15)},
			&sdk.Verdict{Ruling: sdk.Pass, Reasons: []string{"success_rate effect +0.100 [+0.050, +0.150] is at least +0.000"},
				Metrics: map[string]float64{"effect": 0.1, "min_effect": 0}}, ""},
		{"fail", sdk.Comparison{Config: map[string]any{"min_effect": 0.2}, Metrics: metric(0.1, 0.05, 0.15)},
			&sdk.Verdict{Ruling: sdk.Fail, Reasons: []string{"success_rate effect +0.100 [+0.050, +0.150] is below +0.200"},
				Metrics: map[string]float64{"effect": 0.1, "min_effect": 0.2}}, ""},
		{"review", sdk.Comparison{Config: map[string]any{"min_effect": 0.1}, Metrics: metric(0.1, 0.05, 0.15)},
			&sdk.Verdict{Ruling: sdk.Review, Reasons: []string{"success_rate effect +0.100 [+0.050, +0.150] straddles +0.100"},
				Metrics: map[string]float64{"effect": 0.1, "min_effect": 0.1}}, ""},
		{"missing metric", sdk.Comparison{Config: map[string]any{"metric": "cost"}, Metrics: metric(0.1, 0.05, 0.15)},
			nil, `comparison has no metric "cost"`},
		{"bad min_effect", sdk.Comparison{Config: map[string]any{"min_effect": "high"}},
			nil, `min_effect: want a number, got string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := gate.Check(context.Background(), &tt.c)
			if tt.wantErr != "" {
				var se *sdk.Error
				if !errors.As(err, &se) || se.Code != sdk.CodeInvalid || err.Error() != `plugin "threshold-gate": `+tt.wantErr {
					t.Fatalf("err = %v, want sdk.Error %s %q", err, sdk.CodeInvalid, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("verdict = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestEchoProviderParity: the echo provider over a process answers as its
// Chat does in-process, including the 1 KiB benchmark payload.
func TestEchoProviderParity(t *testing.T) {
	p := openPlugin(t, echoPkg, nil)
	info := describe(t, "echo-provider", p)
	if info.Kind != sdk.KindProvider || info.Name != "echo-provider" {
		t.Fatalf("describe = %+v", info)
	}
	prov := plugin.NewClient("echo-provider", p, info)
	kib := strings.Repeat("k", 1024)
	tests := []struct {
		name string
		req  sdk.ChatRequest
		want sdk.ChatResponse
	}{
		{"last user message", sdk.ChatRequest{Model: "m1", Messages: []sdk.Message{
			{Role: "system", Content: "be brief"}, {Role: "user", Content: "first"},
			{Role: "assistant", Content: "ok"}, {Role: "user", Content: "hello there"}}},
			sdk.ChatResponse{Text: "hello there", FinishReason: "stop", Model: "m1", Usage: sdk.Usage{InputTokens: 2, OutputTokens: 2}}},
		{"no user message", sdk.ChatRequest{Messages: []sdk.Message{{Role: "system", Content: "x"}}},
			sdk.ChatResponse{FinishReason: "stop"}},
		{"1 KiB", sdk.ChatRequest{Messages: []sdk.Message{{Role: "user", Content: kib}}},
			sdk.ChatResponse{Text: kib, FinishReason: "stop", Usage: sdk.Usage{InputTokens: 256, OutputTokens: 256}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := prov.Chat(context.Background(), &tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Fatalf("chat = %+v, want %+v", *got, tt.want)
			}
		})
	}
}

// TestLargeMessages: requests and responses over gRPC's 4 MiB default pass.
func TestLargeMessages(t *testing.T) {
	p := openPlugin(t, echoPkg, nil)
	prov := plugin.NewClient("echo-provider", p, sdk.Info{})
	big := strings.Repeat("0123456789abcdef", 5<<20/16) // 5 MiB
	got, err := prov.Chat(context.Background(), &sdk.ChatRequest{Messages: []sdk.Message{{Role: "user", Content: big}}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Text != big {
		t.Fatalf("echoed %d bytes, want %d", len(got.Text), len(big))
	}

	// Over the raised limit, the request is refused before it is sent.
	huge := make([]byte, 64<<20)
	_, err = p.RoundTrip(context.Background(), huge)
	if want := `plugin "echo-provider": call: request of 67108864 bytes is over the 64 MiB message limit`; err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
}

// TestWrongAPI: a plugin that says api 2 is described as such, and
// sdk.CheckInfo refuses it naming the plugin.
func TestWrongAPI(t *testing.T) {
	p := openPlugin(t, misbehavePkg, nil, "--api", "2")
	info := describe(t, "misbehave", p)
	if info.API != 2 {
		t.Fatalf("api = %d, want 2", info.API)
	}
	err := sdk.CheckInfo(info)
	if want := `plugin "misbehave": api version 2, host speaks 1`; err == nil || err.Error() != want {
		t.Fatalf("CheckInfo = %v, want %s", err, want)
	}
}

// TestEnvScrubbed: the child sees the allow-list, the host's additions and
// go-plugin's variables, never the rest of the host's environment.
func TestEnvScrubbed(t *testing.T) {
	t.Setenv("SEXTANT_TEST_SECRET", "hunter2")
	t.Setenv("OPENAI_API_KEY", "sk-test")
	t.Setenv("LANG", "C.UTF-8")
	tests := []struct {
		name  string
		allow []string
		env   []string
		want  []string
	}{
		{"default allow-list", nil, []string{"SEXTANT_EXTRA=1"},
			append(presentOf(DefaultEnvAllow), "SEXTANT_EXTRA")},
		{"explicit allow-list", []string{"LANG", "OPENAI_API_KEY"}, nil,
			[]string{"LANG", "OPENAI_API_KEY"}},
		{"nothing allowed", []string{}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := openPlugin(t, misbehavePkg, func(c *Config) { c.EnvAllow, c.Env = tt.allow, tt.env })
			v, err := check(context.Background(), p, "env")
			if err != nil {
				t.Fatal(err)
			}
			want := append(append([]string(nil), tt.want...),
				"PLUGIN_MAX_PORT", "PLUGIN_MIN_PORT", "PLUGIN_PROTOCOL_VERSIONS", "PLUGIN_UNIX_SOCKET_DIR", "SEXTANT_PLUGIN")
			sort.Strings(want)
			if !reflect.DeepEqual(v.Reasons, want) {
				t.Fatalf("child env names = %v, want %v", v.Reasons, want)
			}
		})
	}
}

// presentOf returns the names in names that are set in the host.
func presentOf(names []string) []string {
	var out []string
	for _, n := range names {
		if _, ok := os.LookupEnv(n); ok {
			out = append(out, n)
		}
	}
	return out
}

// TestChecksum: a mismatching binary is refused before exec — the script
// would leave a marker file if it ran — and a matching one opens.
func TestChecksum(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	script := filepath.Join(dir, "evil.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	gate := plugintest.Native(t, thresholdPkg)
	tests := []struct {
		name    string
		command string
		sha     string
		wantErr string // regexp
	}{
		{"mismatch", script, strings.Repeat("0", 64),
			`^plugin "evil": verify sha256: mismatch \(want 000000000000…, got ` + plugintest.SHA256(t, script)[:12] + `…\)$`},
		{"missing file", filepath.Join(dir, "nope"), strings.Repeat("0", 64),
			`^plugin "evil": verify sha256: open .*/nope: no such file or directory$`},
		{"not hex", script, "xyz", `^plugin "evil": sha256: want 64 hex digits, got "xyz"$`},
		{"match", gate, plugintest.SHA256(t, gate), ""},
		{"match, upper case", gate, strings.ToUpper(plugintest.SHA256(t, gate)), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Open(context.Background(), Config{Name: "evil", Command: []string{tt.command}, SHA256: tt.sha, Logger: quietLogger()})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				p.Close(context.Background())
				return
			}
			if err == nil {
				p.Close(context.Background())
				t.Fatal("Open succeeded")
			}
			if !regexp.MustCompile(tt.wantErr).MatchString(err.Error()) {
				t.Fatalf("err = %v, want %s", err, tt.wantErr)
			}
			if _, err := os.Stat(marker); !os.IsNotExist(err) {
				t.Fatalf("the script ran (marker: %v)", err)
			}
		})
	}
	if _, err := Open(context.Background(), Config{Name: "evil", Command: []string{script}, SHA256: strings.Repeat("0", 64), Logger: quietLogger()}); !errors.Is(err, ErrChecksum) {
		t.Fatalf("errors.Is(%v, ErrChecksum) = false", err)
	}
}

// TestStartFailures: a child that is not a plugin fails Open with one line
// that says what it did, and leaves nothing running.
func TestStartFailures(t *testing.T) {
	misbehave := plugintest.Native(t, misbehavePkg)
	notExec := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(notExec, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		command []string
		want    string
	}{
		{"garbage on stdout before the handshake", []string{misbehave, "--garbage-stdout"},
			`plugin "x": handshake failed: unexpected line on stdout: "hello, I am not a handshake line"`},
		{"exits before the handshake", []string{"/bin/sh", "-c", "echo 'cannot start: no config' >&2; exit 7"},
			`plugin "x": process exited (exit status 7) before the handshake: cannot start: no config`},
		// In a PID namespace the child is its init, which the kernel
		// protects from its own signals: kill itself it cannot.
		{"killed before the handshake", []string{"/bin/sh", "-c", "kill -9 $$"},
			`plugin "x": process exited (signal: killed) before the handshake`},
		{"cannot kill itself in its PID namespace", []string{"/bin/sh", "-c", "kill -9 $$; echo survived >&2; exit 9"},
			`plugin "x": process exited (exit status 9) before the handshake: survived`},
		{"silent", []string{"/bin/sh", "-c", "sleep 30"},
			`plugin "x": handshake failed: no handshake line within 500ms`},
		{"not executable", []string{notExec},
			`plugin "x": start: fork/exec ` + notExec + `: permission denied`},
		{"not found", []string{"no-such-sextant-plugin"},
			`plugin "x": command: exec: "no-such-sextant-plugin": executable file not found in $PATH`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			switch {
			case tt.name == "killed before the handshake" && useNamespaces():
				noNamespaces.Store(true)
				defer noNamespaces.Store(false)
			case tt.name == "cannot kill itself in its PID namespace" && !useNamespaces():
				t.Skip("no PID namespaces here")
			}
			// Only the silent child needs the short start timeout; the
			// others fail on their own, however loaded the machine.
			timeout := time.Minute
			if tt.name == "silent" {
				timeout = 500 * time.Millisecond
			}
			p, err := Open(context.Background(), Config{Name: "x", Command: tt.command, StartTimeout: timeout, Logger: quietLogger()})
			if err == nil {
				p.Close(context.Background())
				t.Fatal("Open succeeded")
			}
			if err.Error() != tt.want {
				t.Fatalf("err = %s\nwant  %s", err, tt.want)
			}
		})
	}
}

// TestRelativeCommand: a relative command is found relative to Dir, and
// its checksum is taken of the same file.
func TestRelativeCommand(t *testing.T) {
	bin := plugintest.Native(t, misbehavePkg)
	p, err := Open(context.Background(), Config{Name: "misbehave", Command: []string{"./" + filepath.Base(bin)},
		Dir: filepath.Dir(bin), SHA256: plugintest.SHA256(t, bin), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	mustOK(t, p)
}

// TestOpenCanceled: Open honours its context while waiting for the handshake.
func TestOpenCanceled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := Open(ctx, Config{Name: "x", Command: []string{"/bin/sh", "-c", "sleep 30"}, Logger: quietLogger()})
	if want := `plugin "x": start: context deadline exceeded`; err == nil || err.Error() != want || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want %s", err, want)
	}
}

func check(ctx context.Context, p *Plugin, mode string) (*sdk.Verdict, error) {
	return plugin.NewClient("misbehave", p, sdk.Info{APIs: checkAPIs}).Check(ctx, &sdk.Comparison{Config: map[string]any{"mode": mode}})
}

// checkAPIs is what check tells the client the plugin answers: nil for
// api 1 (JSON) only, [1, 2] to send gate.check in api 2.
var checkAPIs []int

func mustOK(t *testing.T, p *Plugin) {
	t.Helper()
	v, err := check(context.Background(), p, "ok")
	if err != nil {
		t.Fatalf("ok call after the fault: %v", err)
	}
	if v.Ruling != sdk.Pass {
		t.Fatalf("ok call: ruling %s", v.Ruling)
	}
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// A zombie is dead; whether anyone reaps it is init's business.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// gone waits up to 10s for pid to die.
func gone(pid int) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if !alive(pid) {
			return true
		}
	}
	return false
}
