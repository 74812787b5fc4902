package run_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/plugin/wasm"
	"github.com/sextant-dev/sextant/host/internal/plugintest"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/sdk"
)

// wasmChainRegistry installs the chain navigator built as a wasm module
// in front of the builtins; opens counts the modules its dialer opens.
func wasmChainRegistry(t *testing.T, opens *atomic.Int32) *plugin.Registry {
	t.Helper()
	dir := t.TempDir()
	pd := filepath.Join(dir, "chain")
	data, err := os.ReadFile(plugintest.Wasm(t, "navigators/chain/plugin"))
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(pd, 0o755)
	os.WriteFile(filepath.Join(pd, "chain.wasm"), data, 0o644)
	os.WriteFile(filepath.Join(pd, "plugin.toml"), []byte("name = \"chain\"\nkind = \"navigator\"\nversion = \"0.1.0\"\napi = 1\n[wasm]\nfile = \"chain.wasm\"\n"), 0o644)
	entries, err := plugin.Discover([]string{dir}, sdk.Registered())
	if err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(dir, "cache")
	return plugin.NewRegistry(entries, plugin.WithLogger(quietLogger()), plugin.WithDialer(plugin.TransportWasm,
		func(ctx context.Context, m *plugin.Manifest, g plugin.Grant) (plugin.Conn, error) {
			opens.Add(1)
			return wasm.Open(ctx, wasm.Config{Name: m.Name, Path: m.ArtifactPath(), CacheDir: cache, Logger: quietLogger()})
		}))
}

// TestPrepareOpensNavigatorOnce: preparing a pipeline over a wasm
// navigator opens the module once (it used to open it twice: once to
// validate the routine, once to run it), and the run completes on it.
// Load then Open per worker opens one module per worker, not one more.
func TestPrepareOpensNavigatorOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the chain navigator as a wasm module")
	}
	ctx := t.Context()
	var opens atomic.Int32
	reg := wasmChainRegistry(t, &opens)
	prep, err := run.Prepare(ctx, "testdata/chain10/pipeline.toml", reg, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close(context.Background())
	if n := opens.Load(); n != 1 {
		t.Fatalf("Prepare opened the wasm navigator %d times, want 1", n)
	}
	if _, ok := prep.Navigator.(*plugin.NavigatorClient); !ok {
		t.Fatalf("navigator is %T, want the wasm module's client", prep.Navigator)
	}
	s, err := store.Open(ctx, t.TempDir(), store.NewConfig().WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := prep.Runner(run.Config{Store: s, Logger: quietLogger()}).Start(ctx, run.Input{ID: "t1", Input: map[string]any{"topic": "x"}})
	if err != nil || res.Status != store.StatusCompleted {
		t.Fatalf("run: %v %+v", err, res)
	}

	opens.Store(0)
	l, err := run.Load(ctx, "testdata/chain10/pipeline.toml", reg, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		p, err := l.Open(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if p.Routine.Hash != l.Routine.Hash {
			t.Fatalf("worker %d routine %s, loaded %s", i, p.Routine.Hash, l.Routine.Hash)
		}
		defer p.Close(context.Background())
	}
	l.Close(ctx)
	if n := opens.Load(); n != 3 {
		t.Fatalf("Load and 3 Opens opened the wasm navigator %d times, want 3", n)
	}
}

// TestLoadInvalid: an invalid pipeline is the loader's invalid-input error.
func TestLoadInvalid(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "pipeline.toml"), []byte("name = \"x\"\n[routine]\nnavigator = \"chain\"\nfile = \"missing.toml\"\n[strategy]\nfile = \"s.toml\"\n"), 0o644)
	builtins, err := plugin.Discover(nil, sdk.Registered())
	if err != nil {
		t.Fatal(err)
	}
	_, err = run.Load(t.Context(), filepath.Join(dir, "pipeline.toml"), plugin.NewRegistry(builtins), quietLogger())
	if !errors.Is(err, sdk.ErrInvalid) {
		t.Fatalf("got %v, want an invalid-pipeline error", fmt.Sprint(err))
	}
}
