package wasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/plugintest"
	"github.com/sextant-dev/sextant/sdk"
	inproc "github.com/sextant-dev/sextant/testdata/plugins/echo-provider/echo"
	"github.com/tetratelabs/wazero"
)

// testCache is the CacheDir of most tests: each opens its own Module, and
// compiling a Go module takes seconds where loading it takes milliseconds.
var testCache string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sextant-wasm-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testCache = dir
	code := m.Run()
	os.RemoveAll(dir)
	plugintest.Cleanup()
	os.Exit(code)
}

// logBuffer collects a Module's log records as text, safely across goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// open opens the module at path as plugin name, closing it with the test.
func open(t *testing.T, name, path string, cfg Config) (*Module, *plugin.Client) {
	t.Helper()
	cfg.Name, cfg.Path = name, path
	if cfg.CacheDir == "" {
		cfg.CacheDir = testCache
	}
	m, err := Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := m.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	info, err := plugin.Describe(t.Context(), name, m)
	if err != nil {
		t.Fatalf("describe: %v", err)
	}
	return m, plugin.NewClient(name, m, info)
}

func root(elem ...string) string {
	return filepath.Join(append([]string{plugintest.Root()}, elem...)...)
}

// manifestSHA reads the sha256 line of a test plugin's plugin.toml.
func manifestSHA(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(root(dir, "plugin.toml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^sha256 = "([0-9a-f]{64})"$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s/plugin.toml: no sha256 line", dir)
	}
	return string(m[1])
}

func metric(low, effect, high float64) []sdk.Metric {
	return []sdk.Metric{{Name: "success_rate", Effect: effect, CILow: low, CIHigh: high}}
}

// The Go test plugins answer over wasm what their code computes in-process:
// echo-provider is compared with its package called directly;
// threshold-gate (a main package) with its formulas spelled out.
func TestGoPlugins(t *testing.T) {
	gatePath := plugintest.Wasm(t, "testdata/plugins/threshold-gate")
	_, gate := open(t, "threshold-gate", gatePath, Config{SHA256: plugintest.SHA256(t, gatePath)})
	if got := gate.Describe(); got.Name != "threshold-gate" || got.Kind != sdk.KindGate || got.Version != "0.2.0" || got.API != 1 || len(got.Config) != 2 {
		t.Errorf("describe = %+v", got)
	}
	for _, tc := range []struct {
		name    string
		config  map[string]any
		metrics []sdk.Metric
		want    *sdk.Verdict
		wantErr string
	}{
		{"pass", nil, metric(0.01, 0.05, 0.09), &sdk.Verdict{Ruling: sdk.Pass,
			Reasons: []string{"success_rate effect +0.050 [+0.010, +0.090] is at least +0.000"},
			Metrics: map[string]float64{"effect": 0.05, "min_effect": 0}}, ""},
		{"fail", map[string]any{"min_effect": 0.1}, metric(0.01, 0.05, 0.09), &sdk.Verdict{Ruling: sdk.Fail,
			Reasons: []string{"success_rate effect +0.050 [+0.010, +0.090] is below +0.100"},
			Metrics: map[string]float64{"effect": 0.05, "min_effect": 0.1}}, ""},
		{"review", map[string]any{"min_effect": 0.02}, metric(0.01, 0.05, 0.09), &sdk.Verdict{Ruling: sdk.Review,
			Reasons: []string{"success_rate effect +0.050 [+0.010, +0.090] straddles +0.020"},
			Metrics: map[string]float64{"effect": 0.05, "min_effect": 0.02}}, ""},
		{"bad config", map[string]any{"min_effect": "high"}, nil, nil, `plugin "threshold-gate": min_effect: want a number, got string`},
		{"no metric", map[string]any{"metric": "cost"}, metric(0, 0, 0), nil, `plugin "threshold-gate": comparison has no metric "cost"`},
	} {
		t.Run("threshold-gate/"+tc.name, func(t *testing.T) {
			got, err := gate.Check(t.Context(), &sdk.Comparison{Config: tc.config, Metrics: tc.metrics})
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr || !errors.Is(err, sdk.ErrInvalid) {
					t.Fatalf("err = %v, want %q (code invalid)", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("verdict = %+v\nwant      %+v", got, tc.want)
			}
		})
	}

	echoPath := plugintest.Wasm(t, "testdata/plugins/echo-provider")
	_, echo := open(t, "echo-provider", echoPath, Config{Pool: 2})
	long := strings.Repeat("é", 512) // 1 KiB
	for _, tc := range []struct {
		name string
		req  sdk.ChatRequest
		want sdk.ChatResponse
	}{
		{"last user message", sdk.ChatRequest{Model: "m1", Messages: []sdk.Message{{Role: "user", Content: "first"}, {Role: "assistant", Content: "x"}, {Role: "user", Content: "hello there!"}}},
			sdk.ChatResponse{Text: "hello there!", FinishReason: "stop", Model: "m1", Usage: sdk.Usage{InputTokens: 3, OutputTokens: 3}}},
		{"no user message", sdk.ChatRequest{Messages: []sdk.Message{{Role: "system", Content: "be brief"}}},
			sdk.ChatResponse{FinishReason: "stop"}},
		{"1 KiB", sdk.ChatRequest{Messages: []sdk.Message{{Role: "user", Content: long}}},
			sdk.ChatResponse{Text: long, FinishReason: "stop", Usage: sdk.Usage{InputTokens: 256, OutputTokens: 256}}},
	} {
		t.Run("echo-provider/"+tc.name, func(t *testing.T) {
			got, err := echo.Chat(t.Context(), &tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("chat = %+v, want %+v", *got, tc.want)
			}
			local, err := inproc.Echo{}.Chat(t.Context(), &tc.req)
			if err != nil || !reflect.DeepEqual(local, got) {
				t.Errorf("in-process chat = %+v, %v; over wasm %+v", local, err, got)
			}
		})
	}
	t.Run("echo-provider/unknown method", func(t *testing.T) {
		_, err := echo.Check(t.Context(), &sdk.Comparison{})
		if want := `plugin "echo-provider": provider plugin "echo-provider" does not answer "gate.check"`; err == nil || err.Error() != want || !errors.Is(err, sdk.ErrUnknownMethod) {
			t.Errorf("err = %v, want %q", err, want)
		}
	})
	t.Run("echo-provider/concurrent", func(t *testing.T) {
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				text := fmt.Sprintf("call %d", i)
				got, err := echo.Chat(t.Context(), &sdk.ChatRequest{Messages: []sdk.Message{{Role: "user", Content: text}}})
				if err != nil || got.Text != text {
					t.Errorf("chat %d = %v, %v", i, got, err)
				}
			})
		}
		wg.Wait()
	})
}

func TestWATGate(t *testing.T) {
	path := root("testdata/plugins/wat-gate/gate.wasm")
	_, c := open(t, "wat-gate", path, Config{SHA256: manifestSHA(t, "testdata/plugins/wat-gate")})
	want := sdk.Info{Name: "wat-gate", Kind: sdk.KindGate, Version: "1.0.0", API: 1,
		Description: "a gate written in WebAssembly text; always passes"}
	if got := c.Describe(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("describe = %+v, want %+v", got, want)
	}
	if err := sdk.CheckInfo(c.Describe()); err != nil {
		t.Error(err)
	}
	for i := range 3 { // the bump allocator is reset by every call
		v, err := c.Check(t.Context(), &sdk.Comparison{Metrics: metric(0, 0, 0), Config: map[string]any{"call": i}})
		if err != nil {
			t.Fatal(err)
		}
		if v.Ruling != sdk.Pass || !slices.Equal(v.Reasons, []string{"wat-gate always passes"}) {
			t.Errorf("check = %+v", v)
		}
	}
	// A request bigger than the initial memory makes sextant_alloc grow it.
	big := strings.Repeat("x", 1<<20)
	if _, err := c.Check(t.Context(), &sdk.Comparison{Config: map[string]any{"big": big}}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Chat(t.Context(), &sdk.ChatRequest{})
	if want := `plugin "wat-gate": wat-gate answers describe and gate.check only`; err == nil || err.Error() != want || !errors.Is(err, sdk.ErrUnknownMethod) {
		t.Errorf("chat err = %v, want %q", err, want)
	}
}

// TestWATArtifacts checks that the committed .wasm files are what their
// manifests promise and, where wabt is installed, what their source builds.
func TestWATArtifacts(t *testing.T) {
	wats, _ := filepath.Glob(root("testdata/plugins/*/*.wat"))
	if len(wats) < 3 {
		t.Fatalf("want at least 3 .wat plugins, found %v", wats)
	}
	for _, wat := range wats {
		dir, _ := filepath.Rel(plugintest.Root(), filepath.Dir(wat))
		t.Run(filepath.Base(dir), func(t *testing.T) {
			wasms, _ := filepath.Glob(root(dir, "*.wasm"))
			if len(wasms) != 1 {
				t.Fatalf("%s: want one .wasm, have %v", dir, wasms)
			}
			if got, want := plugintest.SHA256(t, wasms[0]), manifestSHA(t, dir); got != want {
				t.Errorf("%s: sha256 %s, plugin.toml says %s (run go generate ./host/plugin/wasm)", wasms[0], got, want)
			}
			if _, err := exec.LookPath("wat2wasm"); err != nil {
				t.Skip("wat2wasm not installed")
			}
			out := filepath.Join(t.TempDir(), "out.wasm")
			src := strings.TrimSuffix(wasms[0], ".wasm") + ".wat"
			if b, err := exec.Command("wat2wasm", "-o", out, src).CombinedOutput(); err != nil {
				t.Fatalf("wat2wasm: %v\n%s", err, b)
			}
			if plugintest.SHA256(t, out) != plugintest.SHA256(t, wasms[0]) {
				t.Errorf("%s is stale: run go generate ./host/plugin/wasm", wasms[0])
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A module that exports its memory and nothing else.
	memOnly := write("mem.wasm", []byte("\x00asm\x01\x00\x00\x00"+
		"\x05\x03\x01\x00\x01"+ // memory section: one memory, min 1 page
		"\x07\x0a\x01\x06memory\x02\x00")) // export section: "memory"
	garbage := write("garbage.wasm", []byte("not a wasm module"))
	gate := root("testdata/plugins/wat-gate/gate.wasm")
	gateSHA := manifestSHA(t, "testdata/plugins/wat-gate")
	wrongSHA := strings.Repeat("0", 64)

	for _, tc := range []struct {
		name    string
		cfg     Config
		want    string
		wantErr error
	}{
		{"api version", Config{Name: "bad-api-wat", Path: root("testdata/plugins/bad-api-wat/bad.wasm"), SHA256: manifestSHA(t, "testdata/plugins/bad-api-wat")},
			`plugin "bad-api-wat": api version 2, host speaks 1`, ErrAPIVersion},
		{"wrong checksum", Config{Name: "wat-gate", Path: gate, SHA256: wrongSHA},
			fmt.Sprintf(`plugin "wat-gate": sha256 mismatch (manifest 000000000000…, file %s…)`, gateSHA[:12]), ErrChecksum},
		{"checksum not hex", Config{Name: "wat-gate", Path: gate, SHA256: "9f2c"},
			`plugin "wat-gate": sha256 "9f2c" is not 64 hex digits`, nil},
		{"missing file", Config{Name: "x", Path: filepath.Join(dir, "none.wasm")},
			fmt.Sprintf(`plugin "x": open %s: no such file or directory`, filepath.Join(dir, "none.wasm")), fs.ErrNotExist},
		{"not wasm", Config{Name: "x", Path: garbage},
			`plugin "x": compile garbage.wasm: invalid magic number`, nil},
		{"missing export", Config{Name: "x", Path: memOnly},
			`plugin "x": mem.wasm: missing export "sextant_api" (see sdk/PROTOCOL-wasm.md)`, nil},
		{"bad config", Config{Name: "x", Path: gate, Pool: -1, CallTimeout: -time.Second, AllowHTTP: []string{"example.com"}},
			`plugin "x": negative call timeout -1s; negative pool size -1; allow_http "example.com": want host:port`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Open(t.Context(), tc.cfg)
			if err == nil {
				m.Close(t.Context())
				t.Fatalf("Open succeeded, want %q", tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("err = %q\nwant  %q", err, tc.want)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("errors.Is(err, %v) = false", tc.wantErr)
			}
		})
	}
}

// TestContainment runs each misbehaviour of testdata/plugins/misbehave and
// then a well-behaved call on the same Module: the fault fails its own call
// with one line naming the plugin and the fault, and nothing else.
func TestContainment(t *testing.T) {
	path := plugintest.Wasm(t, "testdata/plugins/misbehave")
	sum := plugintest.SHA256(t, path)
	for _, tc := range []struct {
		mode string
		cfg  Config
		// want is the exact error text (or, with wantRE, a regexp); "" for none.
		want    string
		wantRE  string
		reasons []string
		is      []error
		logs    []string // regexps the log must match
		slow    bool
	}{
		{mode: "ok", reasons: []string{"behaved"}},
		{mode: "loop", cfg: Config{CallTimeout: time.Second}, want: `plugin "misbehave": gate.check: deadline exceeded after 1s`, is: []error{context.DeadlineExceeded, sdk.ErrTimeout}},
		{mode: "sleep", cfg: Config{CallTimeout: time.Second}, want: `plugin "misbehave": gate.check: deadline exceeded after 1s`, is: []error{context.DeadlineExceeded, sdk.ErrTimeout}},
		{mode: "membomb", cfg: Config{CallTimeout: time.Minute}, want: `plugin "misbehave": out of memory (limit 64 MiB)`},
		// No preopened directories: every path is a bad file descriptor.
		{mode: "readfile", want: `plugin "misbehave": read /etc/passwd: open /etc/passwd: Bad file number`, is: []error{sdk.ErrInternal}},
		// No sockets: Go's wasip1 net package falls back to its in-memory fake network.
		{mode: "dial", want: `plugin "misbehave": dial 127.0.0.1:9: dial tcp 127.0.0.1:9: address 127.0.0.1:9: connect: Connection refused`, is: []error{sdk.ErrInternal}},
		{mode: "env", reasons: nil},
		{mode: "panic", wantRE: `^plugin "misbehave": panicked: misbehave: deliberate panic \[main\.Misbehave\.Check\(.*\) .*/testdata/plugins/misbehave/main\.go:\d+ .*\]$`, is: []error{sdk.ErrInternal}},
		// A Go reactor that crashes prints the panic, then traps.
		{mode: "panic-goroutine", want: `plugin "misbehave": trapped: unreachable: panic: misbehave: deliberate panic in a goroutine`,
			logs: []string{`level=INFO msg="panic: misbehave: deliberate panic in a goroutine" plugin=misbehave stream=stderr`}},
		// Slow: the guest builds and encodes 100 MiB of JSON (skipped with -short;
		// misbehave-wat covers the limit in TestABIFaults).
		{mode: "bigoutput", slow: true, cfg: Config{MemoryLimit: 1 << 30, CallTimeout: 5 * time.Minute},
			// 100 MiB of reasons in an api 2 (MessagePack) envelope; 8 bytes more in api 1.
			want: `plugin "misbehave": response of 104857635 bytes exceeds the 16 MiB limit`},
		{mode: "stdout", reasons: []string{"printed garbage"}, logs: []string{
			`level=INFO msg="garbage on stdout \\x00\\x01\\x02 \{not json" plugin=misbehave stream=stdout`,
			`level=WARN msg="plugin output dropped" plugin=misbehave stream=stdout lines=800 limit=200`}},
		{mode: "stderr", reasons: []string{"wrote stderr"}, logs: []string{
			`level=INFO msg="misbehave: a line on stderr" plugin=misbehave stream=stderr`}},
		{mode: "crash", want: `plugin "misbehave": exited with code 3`},
		{mode: "nonsense", want: `plugin "misbehave": unknown mode "nonsense"`, is: []error{sdk.ErrInvalid}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			if tc.slow && testing.Short() {
				t.Skip("slow; without -short")
			}
			var logs logBuffer
			cfg := tc.cfg
			cfg.SHA256, cfg.Logger = sum, logs.logger()
			_, c := open(t, "misbehave", path, cfg)
			v, err := c.Check(t.Context(), &sdk.Comparison{Config: map[string]any{"mode": tc.mode}})
			switch {
			case tc.want == "" && tc.wantRE == "":
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				if !slices.Equal(v.Reasons, tc.reasons) {
					t.Errorf("reasons = %q, want %q", v.Reasons, tc.reasons)
				}
			case err == nil:
				t.Errorf("no error, want %q%s", tc.want, tc.wantRE)
			case tc.want != "" && err.Error() != tc.want:
				t.Errorf("err = %q\nwant  %q", err, tc.want)
			case tc.wantRE != "" && !regexp.MustCompile(tc.wantRE).MatchString(err.Error()):
				t.Errorf("err = %q\nwant match %q", err, tc.wantRE)
			}
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
			for _, target := range tc.is {
				if !errors.Is(err, target) {
					t.Errorf("errors.Is(err, %v) = false", target)
				}
			}
			for _, re := range tc.logs {
				if !regexp.MustCompile(`(?m)^time=\S+ ` + re + `$`).MatchString(logs.String()) {
					t.Errorf("log lacks %s:\n%s", re, logs.String())
				}
			}
			// The host survived, and the next call gets a working instance.
			v, err = c.Check(t.Context(), &sdk.Comparison{Config: map[string]any{"mode": "ok"}})
			if err != nil || v.Ruling != sdk.Pass {
				t.Errorf("ok after %s: %v, %v", tc.mode, v, err)
			}
		})
	}
}

// TestCancel checks that the caller's context interrupts a call, whatever
// the plugin is doing, and that the instance is rebuilt.
func TestCancel(t *testing.T) {
	path := plugintest.Wasm(t, "testdata/plugins/misbehave")
	_, c := open(t, "misbehave", path, Config{})
	for _, mode := range []string{"loop", "sleep"} {
		t.Run(mode, func(t *testing.T) {
			// Have an instance ready, so that the cancel lands in the call.
			if _, err := c.Check(t.Context(), &sdk.Comparison{Config: map[string]any{"mode": "ok"}}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(100*time.Millisecond, cancel)
			_, err := c.Check(ctx, &sdk.Comparison{Config: map[string]any{"mode": mode}})
			if want := `plugin "misbehave": gate.check canceled: context canceled`; err == nil || err.Error() != want || !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, want %q", err, want)
			}
			if _, err := c.Check(t.Context(), &sdk.Comparison{Config: map[string]any{"mode": "ok"}}); err != nil {
				t.Errorf("ok after cancel: %v", err)
			}
		})
	}
}

func TestHTTP(t *testing.T) {
	var gotProbe, gotKey string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotProbe, gotKey = r.Header.Get("X-Probe"), r.Header.Get("X-Probe-Key")
		if r.URL.Path == "/away" {
			http.Redirect(w, r, "http://localhost.invalid:81/", http.StatusFound)
			return
		}
		if r.URL.Path == "/echo" {
			w.Header().Set("X-Echo", gotKey)
			fmt.Fprintf(w, "you sent %s", gotKey)
			return
		}
		fmt.Fprint(w, "hello from the host")
	}))
	defer srv.Close()
	hostPort := srv.Listener.Addr().String()
	path := plugintest.Wasm(t, "testdata/plugins/http-probe")

	const secret = "sk-probe-0123456789"
	creds := map[string]string{"PROBE_KEY": secret}
	for _, tc := range []struct {
		name       string
		allow      []string
		url        string
		credential string
		reasons    []string
		want       string
	}{
		{"granted", []string{hostPort}, srv.URL + "/", "", []string{"status 200", "hello from the host"}, ""},
		// The host fills in the header; the guest reads the echo masked.
		{"credential", []string{hostPort}, srv.URL + "/echo", "PROBE_KEY", []string{"status 200", "you sent key [credential]"}, ""},
		{"credential redirected", []string{hostPort, "localhost.invalid:81"}, srv.URL + "/away", "PROBE_KEY",
			nil, fmt.Sprintf(`plugin "http-probe": http GET %s/away: Get "http://localhost.invalid:81/": redirect from %s to localhost.invalid:81 refused: the request carries a bound credential`, srv.URL, hostPort)},
		{"credential not bound", []string{hostPort}, srv.URL + "/echo", "OTHER_KEY",
			nil, fmt.Sprintf(`plugin "http-probe": http GET %s/echo: credential "OTHER_KEY" is not bound to plugin "http-probe" (the pipeline binds a provider's api_key_env)`, srv.URL)},
		{"not granted", []string{"api.example.com:443"}, srv.URL + "/", "",
			nil, fmt.Sprintf(`plugin "http-probe": http GET %s/: host %q not granted to plugin "http-probe" (grant it with [plugins.http-probe] allow_http)`, srv.URL, hostPort)},
		{"default https port", nil, "https://API.example.com/v1", "",
			nil, `plugin "http-probe": http GET https://API.example.com/v1: host "api.example.com:443" not granted to plugin "http-probe" (grant it with [plugins.http-probe] allow_http)`},
		{"redirect to a host not granted", []string{hostPort}, srv.URL + "/away", "",
			nil, fmt.Sprintf(`plugin "http-probe": http GET %s/away: Get "http://localhost.invalid:81/": host "localhost.invalid:81" not granted to plugin "http-probe" (grant it with [plugins.http-probe] allow_http)`, srv.URL)},
		{"scheme", []string{hostPort}, "file:///etc/passwd", "",
			nil, `plugin "http-probe": http GET file:///etc/passwd: scheme "file" not supported (want http or https)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs logBuffer
			_, c := open(t, "http-probe", path, Config{AllowHTTP: tc.allow, Credentials: creds, Logger: logs.logger()})
			gotProbe, gotKey = "", ""
			v, err := c.Check(t.Context(), &sdk.Comparison{Config: map[string]any{"url": tc.url, "credential": tc.credential}})
			if tc.want != "" {
				if err == nil || err.Error() != tc.want || !errors.Is(err, sdk.ErrUnavailable) {
					t.Errorf("err = %v\nwant  %q", err, tc.want)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(v.Reasons, tc.reasons) || gotProbe != "1" {
					t.Errorf("reasons = %q, X-Probe %q", v.Reasons, gotProbe)
				}
				if tc.credential != "" && gotKey != "key "+secret {
					t.Errorf("the server got X-Probe-Key %q, want the bound credential", gotKey)
				}
			}
			if tc.credential == "OTHER_KEY" && gotKey != "" {
				t.Errorf("a request with an unbound credential was sent (X-Probe-Key %q)", gotKey)
			}
			// The log host function: the plugin's message at its level, under its name.
			want := fmt.Sprintf(`level=WARN msg="probing %s" plugin=http-probe`, tc.url)
			if !strings.Contains(logs.String(), want) {
				t.Errorf("log lacks %s:\n%s", want, logs.String())
			}
		})
	}
}

// TestDiskCache checks that Open fills CacheDir and that a Module opens
// from it (in a fresh cache, as a new process would).
func TestDiskCache(t *testing.T) {
	path := plugintest.Wasm(t, "testdata/plugins/threshold-gate")
	dir := t.TempDir()
	entries := func() map[string]time.Time {
		out := map[string]time.Time{}
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				info, _ := d.Info()
				out[p] = info.ModTime()
			}
			return nil
		})
		return out
	}
	check := func(c *plugin.Client) {
		t.Helper()
		v, err := c.Check(t.Context(), &sdk.Comparison{Metrics: metric(0.01, 0.05, 0.09)})
		if err != nil || v.Ruling != sdk.Pass {
			t.Fatalf("check: %v, %v", v, err)
		}
	}
	m, c := open(t, "threshold-gate", path, Config{CacheDir: dir})
	check(c)
	m.Close(t.Context())
	first := entries()
	if len(first) == 0 {
		t.Fatalf("%s is empty after Open", dir)
	}
	for p := range first {
		if p := filepath.ToSlash(p); !strings.Contains(p, "/wazero-") && !strings.Contains(p, "/sextant-instrument-v") {
			t.Errorf("unexpected cache entry %s", p)
		}
	}

	forgetCache(t, dir) // as in a new process: nothing compiled in memory
	_, c = open(t, "threshold-gate", path, Config{CacheDir: dir})
	check(c)
	if second := entries(); fmt.Sprint(second) != fmt.Sprint(first) {
		t.Errorf("cache changed on the second Open:\nbefore %v\nafter  %v", first, second)
	}
}

func forgetCache(t *testing.T, _ string) {
	t.Helper()
	if err := Release(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestClose(t *testing.T) {
	path := root("testdata/plugins/wat-gate/gate.wasm")
	m, c := open(t, "wat-gate", path, Config{})
	if err := m.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, err := c.Check(t.Context(), &sdk.Comparison{})
	if want := `plugin "wat-gate": closed`; err == nil || err.Error() != want || !errors.Is(err, ErrClosed) {
		t.Errorf("err = %v, want %q", err, want)
	}
}

// TestABIFaults breaks the ABI from a module not written in Go
// (testdata/plugins/misbehave-wat), each followed by a good call.
func TestABIFaults(t *testing.T) {
	path := root("testdata/plugins/misbehave-wat/misbehave.wasm")
	sum := manifestSHA(t, "testdata/plugins/misbehave-wat")
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		call    func(context.Context, *plugin.Client) error
		want    string
		is      error
	}{
		{"huge response", 0, func(ctx context.Context, c *plugin.Client) error {
			_, err := c.Check(ctx, &sdk.Comparison{})
			return err
		},
			`plugin "misbehave-wat": response of 104857672 bytes exceeds the 16 MiB limit`, nil},
		{"response outside memory", 0, func(ctx context.Context, c *plugin.Client) error {
			_, err := c.Chat(ctx, &sdk.ChatRequest{})
			return err
		},
			`plugin "misbehave-wat": response of 1000 bytes at 0xfde8 is outside its memory`, nil},
		{"trap", 0, func(ctx context.Context, c *plugin.Client) error {
			_, err := c.Load(ctx, &sdk.LoadRequest{})
			return err
		},
			`plugin "misbehave-wat": trapped: unreachable`, nil},
		{"empty response", 0, func(ctx context.Context, c *plugin.Client) error {
			_, err := c.Start(ctx, &sdk.StartRequest{})
			return err
		},
			`plugin "misbehave-wat": empty response`, nil},
		{"memory.grow until refused", 0, func(ctx context.Context, c *plugin.Client) error {
			_, err := c.Next(ctx, &sdk.NextRequest{})
			return err
		},
			`plugin "misbehave-wat": out of memory (limit 64 MiB)`, nil},
		{"loop", 300 * time.Millisecond, func(ctx context.Context, c *plugin.Client) error { _, err := c.IO(ctx, &sdk.IORequest{}); return err },
			`plugin "misbehave-wat": navigator.io: deadline exceeded after 300ms`, sdk.ErrTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, c := open(t, "misbehave-wat", path, Config{SHA256: sum, CallTimeout: tc.timeout})
			err := tc.call(t.Context(), c)
			if err == nil || err.Error() != tc.want {
				t.Errorf("err = %v\nwant  %q", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("errors.Is(err, %v) = false", tc.is)
			}
			info, err := plugin.Describe(t.Context(), "misbehave-wat", m)
			if err != nil || info.Name != "misbehave-wat" {
				t.Errorf("describe after %s: %v, %v", tc.name, info, err)
			}
		})
	}
}

// TestDiskCacheTamperedModule: an instrumented module in the disk cache
// whose function body was broken is refused by wazero's validation (the
// machine code beside it does not vouch for other bytes) and rebuilt from
// the original.
func TestDiskCacheTamperedModule(t *testing.T) {
	path := root("testdata/plugins/wat-gate/gate.wasm")
	dir := t.TempDir()
	m, c := open(t, "wat-gate", path, Config{CacheDir: dir})
	want, err := c.Check(t.Context(), &sdk.Comparison{})
	if err != nil {
		t.Fatal(err)
	}
	m.Close(t.Context())
	forgetCache(t, dir)

	cached, err := filepath.Glob(filepath.Join(dir, "sextant-instrument-v*", "*.wasm"))
	if err != nil || len(cached) != 1 {
		t.Fatalf("instrumented cache entries: %v, %v", cached, err)
	}
	bin, err := os.ReadFile(cached[0])
	if err != nil {
		t.Fatal(err)
	}
	broken := slices.Clone(bin)
	broken[firstInstruction(t, broken)] = 0x1a // drop, on an empty stack
	if err := os.WriteFile(cached[0], broken, 0o644); err != nil {
		t.Fatal(err)
	}
	// wazero itself refuses the broken bytes even with their neighbours'
	// machine code in its cache.
	var logs bytes.Buffer
	_, c = open(t, "wat-gate", path, Config{CacheDir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	got, err := c.Check(t.Context(), &sdk.Comparison{})
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("check after rebuild: %v, %v; want %v", got, err, want)
	}
	if !strings.Contains(logs.String(), "instrumented module cache entry unusable") || !strings.Contains(logs.String(), "invalid function[0]") {
		t.Errorf("the broken entry was not refused; log:\n%s", logs.String())
	}
	if again, _ := os.ReadFile(cached[0]); !bytes.Equal(again, bin) {
		t.Error("the broken entry was not rebuilt")
	}
}

// firstInstruction returns the offset of the first instruction of the
// first function body in the wasm module bin.
func firstInstruction(t *testing.T, bin []byte) int {
	t.Helper()
	leb := func(i int) (uint32, int) {
		var v uint32
		for shift := 0; ; shift += 7 {
			b := bin[i]
			i++
			v |= uint32(b&0x7f) << shift
			if b < 0x80 {
				return v, i
			}
		}
	}
	for i := 8; i < len(bin); {
		id := bin[i]
		size, body := leb(i + 1)
		if id == 10 { // code section: count, then size-prefixed bodies
			_, first := leb(body)
			_, at := leb(first) // the body's size
			groups, at := leb(at)
			for ; groups > 0; groups-- { // local declarations: count, type
				_, at = leb(at)
				at++
			}
			return at
		}
		i = body + int(size)
	}
	t.Fatal("no code section")
	return 0
}

// TestCompileSafely: a panic in wazero's compiler (its "TODO: unsupported"
// paths, which validation should keep unreachable) becomes an error, not
// a crash of the host.
func TestCompileSafely(t *testing.T) {
	mod, err := compileSafely(func() (wazero.CompiledModule, error) { panic("TODO: unsupported in wazevo yet: x") })
	if mod != nil || err == nil || !strings.Contains(err.Error(), "compiler failed on the module: TODO: unsupported in wazevo yet: x") {
		t.Fatalf("got %v, %v", mod, err)
	}
}
