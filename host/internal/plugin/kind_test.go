package plugin_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/plugin/wasm"
	"github.com/sextant-dev/sextant/host/internal/plugintest"
	"github.com/sextant-dev/sextant/sdk"
)

// watGateRegistry installs testdata/plugins/wat-gate (a gate written in
// WebAssembly text) into a fresh plugin folder, with its manifest edited by
// edit, and returns a registry that opens it over the wasm transport.
func watGateRegistry(t *testing.T, edit func(manifest string) string) (*plugin.Registry, string) {
	t.Helper()
	src := filepath.Join(plugintest.Root(), "testdata", "plugins", "wat-gate")
	dir := filepath.Join(t.TempDir(), "wat-gate")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"plugin.toml", "gate.wasm"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "plugin.toml" && edit != nil {
			b = []byte(edit(string(b)))
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := plugin.Discover([]string{filepath.Dir(dir)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dial := func(ctx context.Context, m *plugin.Manifest, g plugin.Grant) (plugin.Conn, error) {
		return wasm.Open(ctx, wasm.Config{Name: m.Name, Path: m.ArtifactPath(), SHA256: m.Artifact().SHA256})
	}
	return plugin.NewRegistry(entries, plugin.WithDialer(plugin.TransportWasm, dial)), filepath.Join(dir, "plugin.toml")
}

// TestKindTypedHandles checks that an opened wasm gate is a gate and
// nothing else: before kind-typed clients every wasm or process plugin
// satisfied sdk.Navigator, sdk.Provider and sdk.Gate, so the host's kind
// checks could never fail for them.
func TestKindTypedHandles(t *testing.T) {
	ctx := t.Context()
	reg, _ := watGateRegistry(t, nil)
	h, err := reg.Open(ctx, "wat-gate", plugin.Grant{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	if _, ok := h.Plugin.(sdk.Navigator); ok {
		t.Errorf("a wasm gate (%T) satisfies sdk.Navigator", h.Plugin)
	}
	if _, ok := h.Plugin.(sdk.Provider); ok {
		t.Errorf("a wasm gate (%T) satisfies sdk.Provider", h.Plugin)
	}
	g, err := h.Gate()
	if err != nil {
		t.Fatal(err)
	}
	if v, err := g.Check(ctx, &sdk.Comparison{}); err != nil || v.Ruling != sdk.Pass {
		t.Errorf("check: %v, %v", v, err)
	}
	const want = `plugin "wat-gate" is a gate, not a navigator`
	if _, err := h.Navigator(); err == nil || err.Error() != want || !errors.Is(err, sdk.ErrInvalid) {
		t.Errorf("Navigator() = %v, want %q (invalid)", err, want)
	}
}

// TestOpenKindRefusesOtherKinds checks that a plugin named where another
// kind is expected is refused at load time, naming the plugin and both
// kinds, whether the manifest or the plugin itself gives it away.
func TestOpenKindRefusesOtherKinds(t *testing.T) {
	ctx := t.Context()
	t.Run("manifest", func(t *testing.T) {
		reg, _ := watGateRegistry(t, nil)
		for _, k := range []sdk.Kind{sdk.KindNavigator, sdk.KindProvider} {
			h, err := reg.OpenKind(ctx, "wat-gate", k, plugin.Grant{})
			var ke *sdk.KindError
			if want := `plugin "wat-gate" is a gate, not a ` + string(k); err == nil || err.Error() != want || !errors.As(err, &ke) {
				t.Errorf("OpenKind(%s) = %v, %v; want %q", k, h, err, want)
			}
		}
		_, err := reg.LoadRoutine(ctx, "wat-gate", "routine.bpmn", nil)
		if want := `plugin "wat-gate" is a gate, not a navigator`; err == nil || err.Error() != want {
			t.Errorf("LoadRoutine = %v, want %q", err, want)
		}
		if h, err := reg.OpenKind(ctx, "wat-gate", sdk.KindGate, plugin.Grant{}); err != nil {
			t.Errorf("OpenKind(gate) = %v", err)
		} else {
			h.Close(ctx)
		}
	})
	t.Run("describe", func(t *testing.T) {
		// The manifest says navigator; the module says gate.
		reg, manifest := watGateRegistry(t, func(m string) string {
			return strings.Replace(m, `kind = "gate"`, `kind = "navigator"`, 1)
		})
		h, err := reg.OpenKind(ctx, "wat-gate", sdk.KindNavigator, plugin.Grant{})
		want := `plugin "wat-gate": manifest ` + manifest + ` says it is a navigator, the plugin says it is a gate`
		if err == nil || err.Error() != want {
			t.Errorf("OpenKind = %v, %v; want %q", h, err, want)
		}
	})
}
