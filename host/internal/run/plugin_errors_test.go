package run_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/plugin/process"
	"github.com/sextant-dev/sextant/host/internal/plugin/wasm"
	"github.com/sextant-dev/sextant/host/internal/plugintest"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/sdk"
)

// wasmProvider opens the provider plugin built from pkg over the wasm
// transport with call timeout timeout, as a kind-typed client.
func wasmProvider(t *testing.T, name, pkg string, timeout time.Duration) sdk.Provider {
	t.Helper()
	m, err := wasm.Open(t.Context(), wasm.Config{Name: name, Path: plugintest.Wasm(t, pkg), CallTimeout: timeout, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return providerOver(t, name, m)
}

// providerOver is the kind-typed client of the provider plugin behind
// conn, closed when the test ends.
func providerOver(t *testing.T, name string, conn plugin.Conn) sdk.Provider {
	t.Helper()
	t.Cleanup(func() { conn.Close(context.Background()) })
	info, err := plugin.Describe(t.Context(), name, conn)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plugin.NewKindClient(name, conn, info, sdk.KindProvider)
	if err != nil {
		t.Fatal(err)
	}
	return p.(sdk.Provider)
}

// TestPluginDeadlineNamesPlugin checks that a wasm provider that never
// answers fails at once — its deadline is not retried as if it were a rate
// limit — with an error naming the provider, the plugin, the call and the
// deadline. (Before: `provider "default": timed out after 4 attempts`,
// after four deadlines and three backoffs.)
func TestPluginDeadlineNamesPlugin(t *testing.T) {
	slow := wasmProvider(t, "slow-provider", "testdata/plugins/slow-provider", 300*time.Millisecond)
	ps := run.NewProviders(quietLogger(), &run.Provider{Name: "default", Plugin: slow, Retries: 3,
		Config: map[string]any{"delay_ms": float64(time.Hour / time.Millisecond)}})
	_, _, attempts, err := ps.Chat(t.Context(), "default", &sdk.ChatRequest{Step: "s", Messages: []sdk.Message{{Role: "user", Content: "hi"}}})
	const want = `provider "default" (plugin "slow-provider"): timed out after 1 attempt: provider.chat: deadline exceeded after 300ms`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant  %s", err, want)
	}
	if len(attempts) != 1 {
		t.Errorf("%d attempts, want 1 (a plugin deadline is not retried)", len(attempts))
	}
	// The instance was rebuilt: the next call answers.
	resp, _, _, err := ps.Chat(t.Context(), "default", &sdk.ChatRequest{Step: "s"})
	if err == nil || resp != nil {
		// delay_ms is still an hour: it must time out again, not hang.
		t.Errorf("second call = %v, %v; want the same deadline", resp, err)
	}
}

// TestProviderErrorNamesPlugin checks that an error a wasm provider
// returns itself reaches the caller with the plugin's name. (Before: the
// provider's message alone, `provider "default": failed after 1 attempt:
// open …`.)
func TestProviderErrorNamesPlugin(t *testing.T) {
	slow := wasmProvider(t, "slow-provider", "testdata/plugins/slow-provider", 0)
	ps := run.NewProviders(quietLogger(), &run.Provider{Name: "default", Plugin: slow, Retries: 3,
		Config: map[string]any{"log": "/no/such/dir/calls.log"}})
	_, _, attempts, err := ps.Chat(t.Context(), "default", &sdk.ChatRequest{Step: "s", Messages: []sdk.Message{{Role: "user", Content: "hi"}}})
	const prefix = `provider "default" (plugin "slow-provider"): failed after 1 attempt: open /no/such/dir/calls.log: `
	if err == nil || !strings.HasPrefix(err.Error(), prefix) {
		t.Errorf("err = %v\nwant  %s…", err, prefix)
	}
	if len(attempts) != 1 {
		t.Errorf("%d attempts, want 1", len(attempts))
	}
}

// recorder is a plugin.Conn that keeps every request envelope it carries.
type recorder struct {
	plugin.Conn
	mu   sync.Mutex
	sent [][]byte
}

func (r *recorder) RoundTrip(ctx context.Context, req []byte) ([]byte, error) {
	r.mu.Lock()
	r.sent = append(r.sent, append([]byte(nil), req...))
	r.mu.Unlock()
	return r.Conn.RoundTrip(ctx, req)
}

// keyEchoServer is an OpenAI-compatible server that answers every chat
// with the Authorization header it received, and remembers them.
func keyEchoServer(t *testing.T) (*httptest.Server, *sync.Map) {
	var seen sync.Map
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		seen.Store(auth, true)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"model":   "m",
			"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": "you sent " + auth}, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 1, "completion_tokens": 2},
		})
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

// installOpenAI writes a pipeline whose default provider is the openai
// plugin at srv with its key in env, and installs the plugin beside it
// from artifact with the manifest section section ("[wasm]…" or
// "[process]…"). It returns the pipeline's path and the plugin folder.
func installOpenAI(t *testing.T, srv *httptest.Server, env, artifact, file, section string) (string, string) {
	t.Helper()
	hostPort := strings.TrimPrefix(srv.URL, "http://")
	path := onePipeline(t, "openai", env, fmt.Sprintf("base_url = %q", srv.URL+"/v1"),
		fmt.Sprintf("[plugins.openai]\nallow_http = [%q]\n", hostPort))
	dir := filepath.Join(filepath.Dir(path), "plugins", "openai")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(artifact)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, file), mod, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := fmt.Sprintf("name = \"openai\"\nkind = \"provider\"\nversion = \"1.0.0\"\napi = 1\n%s\n[requests]\nhttp = [%q]\n", section, hostPort)
	if err := os.WriteFile(filepath.Join(dir, "plugin.toml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, filepath.Dir(dir)
}

// TestWasmCredentialInjection runs the first-party openai provider as a
// wasm plugin against a local OpenAI-compatible server: the host binds the
// key once, its http function fills in the Authorization header the plugin
// asks for, and the key appears in no request envelope the sandbox
// receives, nor in the answer it reads back (the server echoes it).
func TestWasmCredentialInjection(t *testing.T) {
	const env, key = "SEXTANT_TEST_WASM_KEY", "sk-test-wasm-0123456789abcdef"
	t.Setenv(env, key)
	srv, seen := keyEchoServer(t)
	path, plugins := installOpenAI(t, srv, env, plugintest.Wasm(t, "plugins/openai/plugin"), "openai.wasm", "[wasm]\nfile = \"openai.wasm\"")
	entries, err := plugin.Discover([]string{plugins}, sdk.Registered())
	if err != nil {
		t.Fatal(err)
	}
	var rec *recorder
	var bound map[string]string
	dial := func(ctx context.Context, m *plugin.Manifest, g plugin.Grant) (plugin.Conn, error) {
		bound = g.Credentials
		conn, err := wasm.Open(ctx, wasm.Config{Name: m.Name, Path: m.ArtifactPath(), AllowHTTP: g.AllowHTTP,
			Credentials: g.Credentials, Logger: quietLogger()})
		if err != nil {
			return nil, err
		}
		rec = &recorder{Conn: conn}
		return rec, nil
	}
	reg := plugin.NewRegistry(entries, plugin.WithDialer(plugin.TransportWasm, dial), plugin.WithLogger(quietLogger()))
	prep, err := run.Prepare(t.Context(), path, reg, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close(context.Background())
	if rec == nil {
		t.Fatal("the openai plugin was not opened over wasm")
	}
	if bound[env] != key {
		t.Errorf("bound credentials = %v, want %s bound", bound, env)
	}

	resp, err := ask(t, prep)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := seen.Load("Bearer " + key); !ok {
		t.Errorf("the server never saw the bearer token")
	}
	if want := "you sent Bearer [credential]"; resp.Text != want {
		t.Errorf("answer %q, want %q (the echoed key masked)", resp.Text, want)
	}
	rec.check(t, key)
}

// TestProcessCredentialEnv runs the openai provider as a process plugin:
// the key is bound once, in the child's environment (plugin.CredentialEnv,
// as the CLI's dialer does), and no call carries it.
func TestProcessCredentialEnv(t *testing.T) {
	const env, key = "SEXTANT_TEST_PROCESS_KEY", "sk-test-process-0123456789abcdef"
	t.Setenv(env, key)
	srv, seen := keyEchoServer(t)
	path, plugins := installOpenAI(t, srv, env, plugintest.Native(t, "plugins/openai/plugin"), "openai", "[process]\ncommand = \"./openai\"")
	entries, err := plugin.Discover([]string{plugins}, sdk.Registered())
	if err != nil {
		t.Fatal(err)
	}
	var rec *recorder
	dial := func(ctx context.Context, m *plugin.Manifest, g plugin.Grant) (plugin.Conn, error) {
		conn, err := process.Open(ctx, process.Config{Name: m.Name, Command: []string{m.ArtifactPath()}, Dir: m.Dir(),
			Env: plugin.CredentialEnv(g.Credentials), Logger: quietLogger()})
		if err != nil {
			return nil, err
		}
		rec = &recorder{Conn: conn}
		return rec, nil
	}
	reg := plugin.NewRegistry(entries, plugin.WithDialer(plugin.TransportProcess, dial), plugin.WithLogger(quietLogger()))
	prep, err := run.Prepare(t.Context(), path, reg, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close(context.Background())
	if rec == nil {
		t.Fatal("the openai plugin was not opened as a process")
	}
	if _, err := ask(t, prep); err != nil {
		t.Fatal(err)
	}
	if _, ok := seen.Load("Bearer " + key); !ok {
		t.Errorf("the server never saw the bearer token")
	}
	rec.check(t, key)
}

// check fails t if no call was carried or if any request envelope holds key.
func (r *recorder) check(t *testing.T, key string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.sent) < 2 {
		t.Fatalf("%d envelopes recorded, want describe and chat", len(r.sent))
	}
	for _, env := range r.sent {
		if strings.Contains(string(env), key) {
			t.Errorf("the key crossed the wire: %s", env)
		}
	}
}
