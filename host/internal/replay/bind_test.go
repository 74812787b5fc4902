package replay_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/plugin/wasm"
	"github.com/sextant-dev/sextant/host/internal/plugintest"
	"github.com/sextant-dev/sextant/host/internal/replay"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/sdk"
)

// navTraffic counts the navigator calls and their request bytes over every
// connection a registry opens.
type navTraffic struct {
	mu    sync.Mutex
	calls map[string]int
	bytes map[string]int
}

// countingConn counts a connection's calls; old hides the plugin's Bind
// in its Describe answer, as a plugin built before binding existed.
type countingConn struct {
	plugin.Conn
	tr  *navTraffic
	old bool
}

func (c countingConn) RoundTrip(ctx context.Context, req []byte) ([]byte, error) {
	m := string(req)
	if i := bytes.Index(req, []byte(`"method":"`)); i >= 0 {
		m = string(req[i+10:])
		m = m[:bytes.IndexByte([]byte(m), '"')]
	} else {
		// an api 2 (MessagePack) envelope holds its method name verbatim
		for _, name := range []string{sdk.MethodBoundStart, sdk.MethodBoundNext, sdk.MethodBoundBoundary, sdk.MethodStart, sdk.MethodNext, sdk.MethodBoundary} {
			if bytes.Contains(req, []byte(name)) {
				m = name
				break
			}
		}
	}
	c.tr.mu.Lock()
	c.tr.calls[m]++
	c.tr.bytes[m] += len(req)
	c.tr.mu.Unlock()
	resp, err := c.Conn.RoundTrip(ctx, req)
	if c.old && m == sdk.MethodDescribe {
		resp = bytes.Replace(resp, []byte(`,"bind":true`), nil, 1)
	}
	return resp, err
}

// wasmBPMN is a registry whose bpmn navigator is the wasm build.
func wasmBPMN(t *testing.T, tr *navTraffic, old bool) *plugin.Registry {
	t.Helper()
	dir := t.TempDir()
	pd := filepath.Join(dir, "bpmn")
	data, err := os.ReadFile(plugintest.Wasm(t, "navigators/bpmn/plugin"))
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(pd, 0o755)
	os.WriteFile(filepath.Join(pd, "bpmn.wasm"), data, 0o644)
	os.WriteFile(filepath.Join(pd, "plugin.toml"), []byte("name = \"bpmn\"\nkind = \"navigator\"\nversion = \"0.1.0\"\napi = 1\n[wasm]\nfile = \"bpmn.wasm\"\n"), 0o644)
	entries, err := plugin.Discover([]string{dir}, sdk.Registered())
	if err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(os.TempDir(), "sextant-replay-test-wasm-cache")
	return plugin.NewRegistry(entries, plugin.WithLogger(quiet), plugin.WithDialer(plugin.TransportWasm,
		func(ctx context.Context, m *plugin.Manifest, g plugin.Grant) (plugin.Conn, error) {
			c, err := wasm.Open(ctx, wasm.Config{Name: m.Name, Path: m.ArtifactPath(), CacheDir: cache, Logger: quiet})
			if err != nil {
				return nil, err
			}
			return countingConn{Conn: c, tr: tr, old: old}, nil
		}))
}

// TestReplayWasmNavigatorBinds replays recorded tasks with the BPMN
// navigator built as a wasm module, bound once per worker and called with
// deltas, and as an older plugin that gets whole requests: both reproduce
// every task (fidelity 100 %) with the builtin's results, and the bound
// calls carry far fewer bytes.
func TestReplayWasmNavigatorBinds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the bpmn navigator as a wasm module")
	}
	const n = 20
	src := record(t, n)
	base := load(t, "../../../pipelines/email-triage/strategies/email-handler.toml")
	cand := base.Clone()
	cand.Metadata.Version = "9.9.9"
	cfg := replay.Config{Prepare: prepare, Source: src, Pipeline: "email-triage", Strategies: []*strategy.Strategy{base, cand}, Workers: 2, Logger: quiet}
	want := replayAll(t, cfg)
	perCall := map[bool]float64{}
	for _, old := range []bool{false, true} {
		tr := &navTraffic{calls: map[string]int{}, bytes: map[string]int{}}
		reg := wasmBPMN(t, tr, old)
		l, err := run.Load(context.Background(), triage, reg, quiet)
		if err != nil {
			t.Fatal(err)
		}
		c := cfg
		c.Prepare = func(ctx context.Context) (*run.Prepared, error) { return l.Open(ctx) }
		got := replayAll(t, c)
		l.Close(context.Background())
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("old=%v: wasm navigator's replay differs from the builtin's:\n got  %+v\n want %+v", old, got, want)
		}
		for _, r := range got {
			if r.SelfReplay && !r.Reproduced {
				t.Fatalf("old=%v: task %s not reproduced: %+v", old, r.Task, r.Divergence)
			}
		}
		whole := tr.calls[sdk.MethodStart] + tr.calls[sdk.MethodNext] + tr.calls[sdk.MethodBoundary]
		bound := tr.calls[sdk.MethodBoundStart] + tr.calls[sdk.MethodBoundNext] + tr.calls[sdk.MethodBoundBoundary]
		wholeB := tr.bytes[sdk.MethodStart] + tr.bytes[sdk.MethodNext] + tr.bytes[sdk.MethodBoundary]
		boundB := tr.bytes[sdk.MethodBind] + tr.bytes[sdk.MethodBoundStart] + tr.bytes[sdk.MethodBoundNext] + tr.bytes[sdk.MethodBoundBoundary]
		switch {
		case old && (bound != 0 || tr.calls[sdk.MethodBind] != 0 || whole == 0):
			t.Fatalf("a plugin without Bind got bound calls: %v", tr.calls)
		case !old && (whole != 0 || bound == 0):
			t.Fatalf("a binding plugin got whole requests: %v", tr.calls)
		case !old && tr.calls[sdk.MethodBind] != 2*c.Workers:
			t.Fatalf("%d binds, want one per worker and strategy (%d): %v", tr.calls[sdk.MethodBind], 2*c.Workers, tr.calls)
		}
		if old {
			perCall[old] = float64(wholeB) / float64(whole)
		} else {
			perCall[old] = float64(boundB) / float64(bound)
		}
		t.Logf("old=%v: %v; %.0f request bytes per navigator call (binds included)", old, tr.calls, perCall[old])
	}
	if perCall[false]*2 > perCall[true] {
		t.Fatalf("bound calls carry %.0f bytes each, whole requests %.0f: want less than half", perCall[false], perCall[true])
	}
}
