package plugin_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/plugin/process"
	"github.com/sextant-dev/sextant/host/internal/plugin/wasm"
	"github.com/sextant-dev/sextant/host/internal/plugintest"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/navigators/bpmn"
	"github.com/sextant-dev/sextant/navigators/chain"
	"github.com/sextant-dev/sextant/navigators/dag"
	"github.com/sextant-dev/sextant/sdk"
)

// navigators lists the first-party navigators with their routine fixtures.
var navigators = []struct {
	name     string
	builtin  func() sdk.Navigator
	routines string // glob under the repository root
}{
	{"bpmn", func() sdk.Navigator { return bpmn.New() }, "navigators/bpmn/testdata/routines/*.bpmn"},
	{"dag", func() sdk.Navigator { return dag.New() }, "navigators/dag/testdata/*.toml"},
	{"chain", func() sdk.Navigator { return chain.New() }, "navigators/chain/testdata/*.toml"},
}

// openNavigator opens the navigator's plugin main over a wire transport.
// A transport named with the suffix "-full" hides the plugin's Bind, as a
// plugin built before binding existed: every call is a whole request. The
// suffix "-api1" drops api 2 from its Describe answer, as the host talks to
// a plugin that does not list it: every call is JSON.
func openNavigator(t testing.TB, name, transport string) sdk.Navigator {
	t.Helper()
	ctx := context.Background()
	pkg := "navigators/" + name + "/plugin"
	var conn plugin.Conn
	var err error
	full := strings.Contains(transport, "-full")
	api1 := strings.Contains(transport, "-api1")
	base, _, _ := strings.Cut(transport, "-")
	switch base {
	case "wasm":
		conn, err = wasm.Open(ctx, wasm.Config{Name: name, Path: plugintest.Wasm(t, pkg), CacheDir: cacheDir(t)})
	case "process":
		conn, err = process.Open(ctx, process.Config{Name: name, Command: []string{plugintest.Native(t, pkg)}})
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	info, err := plugin.Describe(ctx, name, conn)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Bind {
		t.Fatalf("%s over %s does not advertise bind", name, transport)
	}
	if !slices.Contains(info.APIs, sdk.APIBinary) {
		t.Fatalf("%s over %s does not list api 2: %v", name, transport, info.APIs)
	}
	info.Bind = !full
	if api1 {
		info.APIs = nil
	}
	return plugin.NewClient(name, conn, info)
}

var sharedCache string

func cacheDir(t testing.TB) string {
	if sharedCache == "" {
		d, err := os.MkdirTemp("", "sextant-wasm-cache-")
		if err != nil {
			t.Fatal(err)
		}
		sharedCache = d
	}
	return sharedCache
}

// walk loads a routine and simulates it, returning a comparable transcript:
// the load error, or the simulation's JSON.
func walk(t *testing.T, nav sdk.Navigator, file string, data []byte, opts run.SimOptions) string {
	ctx := context.Background()
	r, err := nav.Load(ctx, &sdk.LoadRequest{Name: filepath.Base(file), Routine: data})
	if err != nil {
		return "load error: " + err.Error()
	}
	opts.Routine = r
	res, err := run.Simulate(ctx, nav, r.Hash, opts)
	if err != nil {
		return "simulate error: " + err.Error()
	}
	b, _ := json.Marshal(res)
	rb, _ := json.Marshal(r)
	return string(rb) + "\n" + string(b)
}

// TestNavigatorParity runs every navigator's routine fixtures linked in, as
// a wasm module and as a process plugin, each called through the
// bind-once methods and through whole requests (as an older plugin is),
// each in api 1 (JSON) and api 2 (MessagePack), and requires identical
// results: the same routine summary and the same trace, byte for byte.
func TestNavigatorParity(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the navigators as plugins")
	}
	root := plugintest.Root()
	for _, n := range navigators {
		t.Run(n.name, func(t *testing.T) {
			files, err := filepath.Glob(filepath.Join(root, n.routines))
			if err != nil || len(files) == 0 {
				t.Fatalf("no fixtures for %s (%v)", n.routines, err)
			}
			transports := []string{"wasm", "process", "wasm-full", "process-full", "wasm-api1", "process-api1", "wasm-full-api1", "process-full-api1"}
			navs := map[string]sdk.Navigator{"builtin": n.builtin()}
			for _, tr := range transports {
				navs[tr] = openNavigator(t, n.name, tr)
			}
			opts := run.SimOptions{Vars: map[string]any{"amount": 500, "urls": []any{"a", "b"}, "topics": []any{"x"}},
				Input: map[string]any{"question": "why?"}}
			compared := 0
			for _, f := range files {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				want := walk(t, navs["builtin"], f, data, opts)
				for _, tr := range transports {
					if got := walk(t, navs[tr], f, data, opts); got != want {
						t.Errorf("%s over %s differs from builtin:\n got  %s\n want %s", filepath.Base(f), tr, clip(got), clip(want))
					}
				}
				compared++
			}
			t.Logf("%s: %d routines identical over builtin, %s", n.name, compared, strings.Join(transports, ", "))
		})
	}
}

func clip(s string) string {
	if len(s) > 400 {
		return s[:400] + "…"
	}
	return strings.ReplaceAll(s, "\n", " | ")
}

// BenchmarkNavigate/bpmn-wasm is BenchmarkNavigate/bpmn (navigators/bpmn)
// with the navigator behind the wasm transport: a 10-task process with
// exclusive and parallel gateways, start to end.
func BenchmarkNavigate(b *testing.B) {
	b.Run("bpmn-wasm", func(b *testing.B) {
		ctx := context.Background()
		nav := openNavigator(b, "bpmn", "wasm")
		data, err := os.ReadFile(filepath.Join(plugintest.Root(), "navigators", "bpmn", "testdata", "routines", "bench.bpmn"))
		if err != nil {
			b.Fatal(err)
		}
		r, err := nav.Load(ctx, &sdk.LoadRequest{Name: "bench.bpmn", Routine: data})
		if err != nil {
			b.Fatal(err)
		}
		vars := map[string]any{"amount": 500}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			st := sdk.State{Routine: r.Hash, Env: sdk.Env{Vars: vars}}
			d, err := nav.Start(ctx, &sdk.StartRequest{State: st})
			if err != nil {
				b.Fatal(err)
			}
			st = d.Apply(st)
			for !d.Complete {
				var id string
				for j := range st.Tokens {
					if st.Tokens[j].Status == sdk.Ready {
						id = st.Tokens[j].ID
						break
					}
				}
				if id == "" {
					b.Fatalf("stuck: %+v", st.Tokens)
				}
				if d, err = nav.Next(ctx, &sdk.NextRequest{State: st, Token: id, Outcome: sdk.Outcome{Status: sdk.OK}}); err != nil {
					b.Fatal(err)
				}
				st = d.Apply(st)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "instances/s")
	})
}
