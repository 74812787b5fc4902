package plugin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/plugin/process"
	"github.com/sextant-dev/sextant/host/internal/plugin/wasm"
	"github.com/sextant-dev/sextant/host/internal/plugintest"
	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/testdata/plugins/tool-kit/kit"
)

const toolKitPkg = "testdata/plugins/tool-kit"

// toolRegistry returns a registry holding the tool-kit plugin over one
// transport: linked in ("builtin"), or installed from a plugin folder with
// a pinned manifest (kind = "tool") as a wasm module or a process plugin,
// asking for HTTP to the hosts in requests. args are the process
// command's arguments.
func toolRegistry(t testing.TB, transport string, requests []string, args ...string) *plugin.Registry {
	t.Helper()
	dialWasm := func(ctx context.Context, m *plugin.Manifest, g plugin.Grant) (plugin.Conn, error) {
		return wasm.Open(ctx, wasm.Config{Name: m.Name, Path: m.ArtifactPath(), SHA256: m.Artifact().SHA256, CacheDir: cacheDir(t),
			MemoryLimit: g.Memory, CallTimeout: g.Timeout, AllowHTTP: g.AllowHTTP})
	}
	dialProcess := func(ctx context.Context, m *plugin.Manifest, g plugin.Grant) (plugin.Conn, error) {
		return process.Open(ctx, process.Config{Name: m.Name, Command: append([]string{m.ArtifactPath()}, m.Process.Args...), Dir: m.Dir(),
			SHA256: m.Artifact().SHA256, CallTimeout: g.Timeout, MemoryLimit: int64(g.Memory)})
	}
	opts := []plugin.Option{plugin.WithDialer(plugin.TransportWasm, dialWasm), plugin.WithDialer(plugin.TransportProcess, dialProcess)}
	if transport == plugin.TransportBuiltin {
		entries, err := plugin.Discover(nil, []sdk.Plugin{kit.Kit{}})
		if err != nil {
			t.Fatal(err)
		}
		return plugin.NewRegistry(entries, opts...)
	}
	dir := filepath.Join(t.TempDir(), kit.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var src, section string
	if transport == plugin.TransportWasm {
		src = plugintest.Wasm(t, toolKitPkg)
		section = fmt.Sprintf("[wasm]\nfile = \"tool-kit.wasm\"\nsha256 = %q\n", plugintest.SHA256(t, src))
	} else {
		src = plugintest.Native(t, toolKitPkg)
		a, _ := json.Marshal(append([]string{}, args...))
		section = fmt.Sprintf("[process]\ncommand = \"tool-kit\"\nargs = %s\nsha256 = %q\n", a, plugintest.SHA256(t, src))
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.Base(src)), b, 0o755); err != nil {
		t.Fatal(err)
	}
	req, _ := json.Marshal(append([]string{}, requests...))
	manifest := fmt.Sprintf("name = %q\nkind = \"tool\"\nversion = \"1.0.0\"\napi = 1\n\n%s\n[requests]\nhttp = %s\n", kit.Name, section, req)
	if err := os.WriteFile(filepath.Join(dir, plugin.ManifestFile), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	entries, err := plugin.Discover([]string{filepath.Dir(dir)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return plugin.NewRegistry(entries, opts...)
}

// openTool opens the tool-kit plugin from reg as a tool, closed when the
// test ends.
func openTool(t testing.TB, reg *plugin.Registry, g plugin.Grant) sdk.Tool {
	t.Helper()
	ctx := context.Background()
	h, err := reg.OpenKind(ctx, kit.Name, sdk.KindTool, g)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(ctx) })
	tool, err := h.Tool()
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

var transports = []string{plugin.TransportBuiltin, plugin.TransportWasm, plugin.TransportProcess}

// outcome is a comparable transcript of one tool call.
func outcome(res *sdk.ToolResult, err error) string {
	if err != nil {
		var e *sdk.Error
		code := ""
		if errors.As(err, &e) {
			code = string(e.Code)
		}
		// A wire plugin's panic says where ("[main.f file:line]"); a
		// builtin's stack goes to the log.
		msg, _, _ := strings.Cut(err.Error(), " [")
		return fmt.Sprintf("error %s: %s", code, msg)
	}
	b, _ := json.Marshal(res)
	return string(b)
}

// TestToolParity: the tool-kit plugin lists the same tools and answers
// every call the same — results, tool failures, refusals, a panic, a
// result over MaxToolResult, an HTTP fetch — linked in, over wasm and
// over a process.
func TestToolParity(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugins")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello from ", r.URL.Path) }))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	calls := []struct {
		name, tool, args string
		want             string
	}{
		{"echo", "echo", `{"x":[1,"two",null]}`, `{"content":"{\"x\":[1,\"two\",null]}","structured":{"config":{"n":2,"root":"/srv"}}}`},
		{"add", "add", `{"a":1,"b":2.5}`, `{"content":"3.5","structured":{"sum":3.5}}`},
		{"add without b", "add", `{"a":1}`, `{"content":"add wants {\"a\": number, \"b\": number}","is_error":true}`},
		{"fail", "fail", `{}`, `{"content":"the tool failed","is_error":true}`},
		{"refuse", "refuse", `{"x":1}`, `error bad_request: plugin "tool-kit": refused: {"x":1}`},
		{"unknown", "rm", `{}`, `error bad_request: plugin "tool-kit": no tool "rm"`},
		{"panic", "panic", `{}`, `error internal: plugin "tool-kit": panicked: tool-kit: deliberate panic`},
		{"big", "big", `{"n":1000}`, `{"content":"` + strings.Repeat("x", 1000) + `"}`},
		{"too big", "big", fmt.Sprintf(`{"n":%d}`, plugin.MaxToolResult+1),
			fmt.Sprintf(`error : plugin "tool-kit": tool.call "big": result of %d bytes is over the %d-byte limit: tool result too large`, plugin.MaxToolResult+1, plugin.MaxToolResult)},
		{"fetch", "fetch", `{"url":"` + srv.URL + `/a"}`, `{"content":"200 hello from /a"}`},
	}
	config := map[string]any{"root": "/srv", "n": 2}
	want, _ := json.Marshal(kit.Tools)
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			ctx := context.Background()
			tool := openTool(t, toolRegistry(t, tr, []string{host}), plugin.Grant{AllowHTTP: []string{host}})
			specs, err := tool.ListTools(ctx)
			if got, _ := json.Marshal(specs); err != nil || string(got) != string(want) {
				t.Fatalf("ListTools = %s, %v\nwant %s", got, err, want)
			}
			for _, c := range calls {
				res, err := tool.CallTool(ctx, &sdk.ToolCallRequest{Name: c.tool, Arguments: json.RawMessage(c.args), Config: config})
				if got := outcome(res, err); got != c.want {
					t.Errorf("%s: got  %s\nwant %s", c.name, clip(got), clip(c.want))
				}
				if c.name == "too big" && !errors.Is(err, plugin.ErrToolResultTooLarge) {
					t.Errorf("too big: %v is not ErrToolResultTooLarge", err)
				}
			}
		})
	}
}

// TestToolHTTPGrant: a wasm tool plugin reaches only the hosts both its
// manifest requests and the pipeline grants.
func TestToolHTTPGrant(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugins")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello") }))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	for _, tc := range []struct {
		name            string
		requests, grant []string
	}{
		{"not granted", []string{u.Host}, nil},
		{"not requested", nil, []string{u.Host}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool := openTool(t, toolRegistry(t, plugin.TransportWasm, tc.requests), plugin.Grant{AllowHTTP: tc.grant})
			res, err := tool.CallTool(context.Background(), &sdk.ToolCallRequest{Name: "fetch", Arguments: json.RawMessage(`{"url":"` + srv.URL + `"}`)})
			want := fmt.Sprintf(`host %q not granted to plugin "tool-kit"`, u.Host)
			if err != nil || !res.IsError || !strings.Contains(res.Content, want) {
				t.Fatalf("fetch = %+v, %v; want a tool error saying %s", res, err, want)
			}
		})
	}
}

// TestToolGarbage: a process tool plugin that answers bytes that are no
// envelope: each call is an error naming the plugin and the method.
func TestToolGarbage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugins")
	}
	ctx := context.Background()
	tool := openTool(t, toolRegistry(t, plugin.TransportProcess, nil, "--garbage"), plugin.Grant{})
	_, err := tool.ListTools(ctx)
	if want := `plugin "tool-kit": tool.list: malformed result (81 a6 72 65 73 75 6c 74 c1 20 6e 6f 74 20 61 6e 20 65 6e 76 65 6c 6f 70 … 25 bytes): at byte 8: result: want a map, got the unused byte 0xc1`; err == nil || err.Error() != want {
		t.Errorf("ListTools: %v\nwant       %s", err, want)
	}
	_, err = tool.CallTool(ctx, &sdk.ToolCallRequest{Name: "echo", Arguments: json.RawMessage(`{}`)})
	if err == nil || !strings.HasPrefix(err.Error(), `plugin "tool-kit": tool.call: malformed result`) {
		t.Errorf("CallTool: %v", err)
	}
}

// TestToolManifest: a tool plugin is a kind like the others: refused as
// another kind before it starts, and refused when its artifact does not
// match its pinned checksum.
func TestToolManifest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugins")
	}
	ctx := context.Background()
	reg := toolRegistry(t, plugin.TransportWasm, nil)
	if _, err := reg.OpenKind(ctx, kit.Name, sdk.KindProvider, plugin.Grant{}); err == nil || err.Error() != `plugin "tool-kit" is a tool, not a provider` {
		t.Errorf("OpenKind(provider) = %v", err)
	}
	h, err := reg.Open(ctx, kit.Name, plugin.Grant{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	if _, ok := h.Plugin.(*plugin.ToolClient); !ok {
		t.Errorf("a wasm tool plugin opens as %T", h.Plugin)
	}
	if _, err := h.Gate(); err == nil || err.Error() != `plugin "tool-kit" is a tool, not a gate` {
		t.Errorf("Gate() = %v", err)
	}
	e, _ := reg.Lookup(kit.Name)
	if err := os.WriteFile(e.Manifest.ArtifactPath(), []byte("\x00asm\x01\x00\x00\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.OpenKind(ctx, kit.Name, sdk.KindTool, plugin.Grant{}); err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Errorf("a changed artifact opens: %v", err)
	}
	// A builtin's list is checked as a wire plugin's is.
	for _, tc := range []struct {
		specs []sdk.ToolSpec
		want  string
	}{
		{[]sdk.ToolSpec{{Name: "a b"}}, `plugin "p": tool.list: tool 0: invalid name "a b" (want 1 to 64 letters, digits, _ or -)`},
		{[]sdk.ToolSpec{{Name: "a"}, {Name: "a"}}, `plugin "p": tool.list: tool "a" listed twice`},
		{[]sdk.ToolSpec{{Name: "a", InputSchema: json.RawMessage(`[1]`)}}, `plugin "p": tool.list: tool "a": input_schema is not a JSON object`},
	} {
		if err := plugin.CheckTools("p", tc.specs); err == nil || err.Error() != tc.want {
			t.Errorf("CheckTools(%v) = %v\nwant %s", tc.specs, err, tc.want)
		}
	}
}

// BenchmarkToolCall is one tool call (add, a few bytes each way) through
// the host's client of the tool-kit plugin: linked in, the host's own
// overhead (the guard and checks around the plugin's CallTool) over the
// plugin's own work, which bare measures alone; over wasm and process,
// the transport's too.
func BenchmarkToolCall(b *testing.B) {
	req := &sdk.ToolCallRequest{Name: "add", Arguments: json.RawMessage(`{"a":1,"b":2.5}`), Config: map[string]any{"root": "/srv"}}
	b.Run("bare", func(b *testing.B) {
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if res, err := (kit.Kit{}).CallTool(ctx, req); err != nil || res.Content != "3.5" {
				b.Fatalf("CallTool = %+v, %v", res, err)
			}
		}
	})
	for _, tr := range transports {
		b.Run(tr, func(b *testing.B) {
			tool := openTool(b, toolRegistry(b, tr, nil), plugin.Grant{})
			ctx := context.Background()
			want := &sdk.ToolResult{Content: "3.5", Structured: json.RawMessage(`{"sum":3.5}`)}
			b.ReportAllocs()
			for b.Loop() {
				res, err := tool.CallTool(ctx, req)
				if err != nil || res.Content != want.Content {
					b.Fatalf("CallTool = %+v, %v", res, err)
				}
			}
			res, _ := tool.CallTool(ctx, req)
			if !reflect.DeepEqual(res, want) {
				b.Fatalf("CallTool = %+v, want %+v", res, want)
			}
		})
	}
}
