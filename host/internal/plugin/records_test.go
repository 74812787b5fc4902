package plugin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/plugin/process"
	"github.com/sextant-dev/sextant/host/internal/plugin/wasm"
	"github.com/sextant-dev/sextant/host/internal/plugintest"
	"github.com/sextant-dev/sextant/plugins/records"
	"github.com/sextant-dev/sextant/sdk"
)

// TestRecordsParity: the first-party records tool plugin answers the same
// linked in, as a wasm module (no filesystem: the table comes in the
// config) and as a process plugin, as `make plugins` builds them.
func TestRecordsParity(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugins")
	}
	const pkg = "plugins/records/plugin"
	cfg := map[string]any{sdk.ToolConfigData: "[[record]]\nid = \"A1\"\nstatus = \"lost\"\ntotal = 42.5\n\n[[record]]\nid = 7\nstatus = \"delivered\"\n",
		sdk.ToolConfigDataFile: "data/orders.toml", "kinds": []any{"refund"}}
	calls := [][2]string{
		{"get", `{"id":"A1"}`}, {"get", `{"id":7}`}, {"get", `{"id":"Z"}`},
		{"search", `{"query":"LOST"}`}, {"search", `{"query":"lost","field":"id"}`},
		{"submit", `{"id":"A1","kind":"refund","details":{"amount":42.5}}`}, {"submit", `{"id":"A1","kind":"cancel"}`},
		{"nope", `{}`},
	}
	var want []string
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			var reg *plugin.Registry
			if tr == plugin.TransportBuiltin {
				entries, err := plugin.Discover(nil, []sdk.Plugin{records.New()})
				if err != nil {
					t.Fatal(err)
				}
				reg = plugin.NewRegistry(entries)
			} else {
				reg = installedRegistry(t, tr, records.Name, pkg)
			}
			ctx := context.Background()
			h, err := reg.OpenKind(ctx, records.Name, sdk.KindTool, plugin.Grant{})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close(ctx)
			tool, err := h.Tool()
			if err != nil {
				t.Fatal(err)
			}
			specs, err := tool.ListTools(ctx)
			if got, _ := json.Marshal(specs); err != nil || len(specs) != 3 {
				t.Fatalf("ListTools = %s, %v", got, err)
			}
			var got []string
			for _, c := range calls {
				res, err := tool.CallTool(ctx, &sdk.ToolCallRequest{Name: c[0], Arguments: json.RawMessage(c[1]), Config: cfg})
				got = append(got, outcome(res, err))
			}
			if want == nil {
				want = got
				return
			}
			for i := range calls {
				if got[i] != want[i] {
					t.Errorf("%s %s:\n got  %s\n want %s (builtin)", calls[i][0], calls[i][1], got[i], want[i])
				}
			}
		})
	}
	if len(want) > 0 && want[0] != `{"content":"{\"id\":\"A1\",\"status\":\"lost\",\"total\":42.5}"}` {
		t.Errorf("get A1 = %s", want[0])
	}
}

// installedRegistry returns a registry holding the plugin built from pkg
// and installed with a pinned manifest (kind = "tool") for transport.
func installedRegistry(t *testing.T, transport, name, pkg string) *plugin.Registry {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var src, section string
	if transport == plugin.TransportWasm {
		src = plugintest.Wasm(t, pkg)
		section = fmt.Sprintf("[wasm]\nfile = %q\nsha256 = %q\n", filepath.Base(src), plugintest.SHA256(t, src))
	} else {
		src = plugintest.Native(t, pkg)
		section = fmt.Sprintf("[process]\ncommand = %q\nsha256 = %q\n", filepath.Base(src), plugintest.SHA256(t, src))
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.Base(src)), b, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := fmt.Sprintf("name = %q\nkind = \"tool\"\nversion = \"1.0.0\"\napi = 1\n\n%s", name, section)
	if err := os.WriteFile(filepath.Join(dir, plugin.ManifestFile), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	entries, err := plugin.Discover([]string{filepath.Dir(dir)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dialWasm := func(ctx context.Context, m *plugin.Manifest, g plugin.Grant) (plugin.Conn, error) {
		return wasm.Open(ctx, wasm.Config{Name: m.Name, Path: m.ArtifactPath(), SHA256: m.Artifact().SHA256, CacheDir: cacheDir(t),
			MemoryLimit: g.Memory, CallTimeout: g.Timeout})
	}
	dialProcess := func(ctx context.Context, m *plugin.Manifest, g plugin.Grant) (plugin.Conn, error) {
		return process.Open(ctx, process.Config{Name: m.Name, Command: []string{m.ArtifactPath()}, Dir: m.Dir(),
			SHA256: m.Artifact().SHA256, CallTimeout: g.Timeout, MemoryLimit: int64(g.Memory)})
	}
	return plugin.NewRegistry(entries, plugin.WithDialer(plugin.TransportWasm, dialWasm), plugin.WithDialer(plugin.TransportProcess, dialProcess))
}
