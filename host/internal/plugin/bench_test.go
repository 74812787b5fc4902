package plugin_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"os"
	"reflect"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/plugin/process"
	"github.com/sextant-dev/sextant/host/internal/plugin/wasm"
	"github.com/sextant-dev/sextant/host/internal/plugintest"
	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/sdktest"
	"github.com/sextant-dev/sextant/testdata/plugins/echo-provider/echo"
)

const echoPkg = "testdata/plugins/echo-provider"

func TestMain(m *testing.M) {
	// Plugin lifecycle logs would interleave with benchmark result lines.
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	code := m.Run()
	plugintest.Cleanup()
	if sharedCache != "" {
		os.RemoveAll(sharedCache)
	}
	os.Exit(code)
}

// kib is a 1 KiB chat request; the echo provider answers with the same
// 1 KiB, so each call carries 1 KiB each way.
var kib = &sdk.ChatRequest{Model: "echo", Messages: []sdk.Message{{Role: "user", Content: strings.Repeat("sextant ", 128)}}}

func openWasm(tb testing.TB, cache string) *plugin.Client {
	tb.Helper()
	ctx := context.Background()
	m, err := wasm.Open(ctx, wasm.Config{Name: "echo-provider", Path: plugintest.Wasm(tb, echoPkg), CacheDir: cache})
	if err != nil {
		tb.Fatal(err)
	}
	info, err := plugin.Describe(ctx, "echo-provider", m)
	if err != nil {
		tb.Fatal(err)
	}
	return plugin.NewClient("echo-provider", m, info)
}

func openProcess(tb testing.TB) *plugin.Client { return openProcessWith(tb, false) }

// openProcessWith opens the echo provider as a process plugin; grpc makes
// it carry calls over gRPC in api 1 (JSON), as before frames and api 2.
func openProcessWith(tb testing.TB, grpc bool) *plugin.Client {
	tb.Helper()
	ctx := context.Background()
	p, err := process.Open(ctx, process.Config{Name: "echo-provider", Command: []string{plugintest.Native(tb, echoPkg)}, ForceGRPC: grpc})
	if err != nil {
		tb.Fatal(err)
	}
	info, err := plugin.Describe(ctx, "echo-provider", p)
	if err != nil {
		tb.Fatal(err)
	}
	if grpc {
		info.APIs = nil
	}
	c := plugin.NewClient("echo-provider", p, info)
	procs.Store(c, p)
	return c
}

// procs maps the clients openProcessWith made to their process plugins.
var procs sync.Map

func processPID(c *plugin.Client) int {
	if p, ok := procs.Load(c); ok {
		return p.(*process.Plugin).PID()
	}
	return 0
}

// TestTransportsAgree is the parity check behind the benchmark: the same
// provider gives the same answer linked in, as wasm and as a process.
func TestTransportsAgree(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins")
	}
	ctx := context.Background()
	want, err := echo.Echo{}.Chat(ctx, kib)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*plugin.Client{"wasm": openWasm(t, ""), "process": openProcess(t), "process-grpc": openProcessWith(t, true)} {
		got, err := c.Chat(ctx, kib)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: %+v, want %+v", name, got, want)
		}
		c.Close(ctx)
	}
}

// BenchmarkPluginCall measures one 1 KiB chat call per transport. Beside
// the wall time it reports cpu-ns/op: the CPU time the host and (for
// process) the plugin spent per call, which a busy machine inflates far
// less than the wall time.
func BenchmarkPluginCall(b *testing.B) {
	ctx := context.Background()
	run := func(b *testing.B, p sdk.Provider) {
		pid := 0
		if c, ok := p.(*plugin.Client); ok {
			pid = processPID(c)
		}
		b.ReportAllocs()
		b.ResetTimer()
		cpu := cpuTime(pid)
		for i := 0; i < b.N; i++ {
			resp, err := p.Chat(ctx, kib)
			if err != nil || len(resp.Text) != 1024 {
				b.Fatalf("chat: %v (%d bytes)", err, len(resp.Text))
			}
		}
		if cpu >= 0 {
			b.ReportMetric(float64(cpuTime(pid)-cpu)/float64(b.N), "cpu-ns/op")
		}
	}
	b.Run("builtin", func(b *testing.B) { run(b, echo.Echo{}) })
	b.Run("wasm", func(b *testing.B) {
		c := openWasm(b, b.TempDir())
		defer c.Close(ctx)
		run(b, c)
	})
	b.Run("process", func(b *testing.B) {
		c := openProcess(b)
		defer c.Close(ctx)
		run(b, c)
	})
	// As process was before frames and api 2: JSON over go-plugin's gRPC.
	b.Run("process-grpc", func(b *testing.B) {
		c := openProcessWith(b, true)
		defer c.Close(ctx)
		run(b, c)
	})
	// The codec alone: the host's client, the SDK's Serve and back, with
	// no transport between them, in api 1 (JSON) and api 2 (MessagePack).
	b.Run("codec", func(b *testing.B) {
		next := navNextRequest()
		nav := bpmnLike{}
		for _, c := range []struct {
			name string
			nav  sdk.Navigator
			prov sdk.Provider
		}{{"json", sdktest.WireAPI1(nav), sdktest.WireAPI1(echo.Echo{})}, {"api2", sdktest.Wire(nav), sdktest.Wire(echo.Echo{})}} {
			b.Run("next-"+c.name, func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if _, err := c.nav.Next(ctx, next); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("chat-"+c.name, func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if _, err := c.prov.Chat(ctx, kib); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	})
	b.Run("wasm-loop", benchRunaway)
}

// navNextRequest is a navigator NextRequest of about 1.2 KB in JSON, as a
// BPMN routine mid-run sends it: a few tokens, the run's variables, the
// strategy, a step's output.
func navNextRequest() *sdk.NextRequest {
	return &sdk.NextRequest{
		State: sdk.State{Routine: "9f2c4e1ab0d3c6f8e7a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3", Seq: 7,
			Tokens: []sdk.Token{
				{ID: "t5", Node: "classify", Status: sdk.Ready},
				{ID: "t6", Node: "join_review", Status: sdk.Parked, Scope: "t1"},
				{ID: "t7", Node: "wait_reply", Status: sdk.Waiting, Triggers: []string{"reply_received", "reply_timeout"},
					Attrs: map[string]any{"timers": map[string]any{"reply_timeout": "timeDuration PT5M"}}},
			},
			Data: map[string]any{"joins": map[string]any{"join_review": []any{"t6"}}},
			Env: sdk.Env{
				Input: map[string]any{"subject": "Invoice 2026-0042 overdue", "from": "billing@example.com",
					"body": "Dear customer, our records show that invoice 2026-0042 is now 14 days overdue."},
				Vars: map[string]any{"extract": map[string]any{"amount": 1250.5, "currency": "EUR", "due": "2026-01-15"},
					"triage": map[string]any{"action": "confirm", "confidence": 0.62}},
				Strategy: map[string]any{"parameters": map[string]any{"response_speed": 0.75, "user_confirmation": 0.6, "autonomy_level": 0.7},
					"constraints": map[string]any{"never_execute": []any{"forward_to_external_addresses", "change_account_settings"},
						"must_confirm_before": []any{"sending_emails_to_clients"}}},
			}},
		Token:   "t5",
		Outcome: sdk.Outcome{Status: sdk.OK, Output: map[string]any{"action": "confirm", "confidence": 0.62, "reason": "financial action from a known sender"}},
	}
}

// bpmnLike answers Next as a navigator moving one token on does.
type bpmnLike struct{}

func (bpmnLike) Describe() sdk.Info {
	return sdk.Info{Name: "bpmn-like", Kind: sdk.KindNavigator, Version: "1.0.0", API: sdk.APIVersion}
}
func (bpmnLike) Load(context.Context, *sdk.LoadRequest) (*sdk.Routine, error) {
	return &sdk.Routine{}, nil
}
func (bpmnLike) IO(context.Context, *sdk.IORequest) (*sdk.NodeIO, error) { return &sdk.NodeIO{}, nil }
func (bpmnLike) Start(context.Context, *sdk.StartRequest) (*sdk.Decision, error) {
	return &sdk.Decision{}, nil
}
func (bpmnLike) Boundary(context.Context, *sdk.BoundaryRequest) (*sdk.Decision, error) {
	return &sdk.Decision{}, nil
}
func (bpmnLike) Next(_ context.Context, r *sdk.NextRequest) (*sdk.Decision, error) {
	return &sdk.Decision{Remove: []string{r.Token}, Seq: r.State.Seq + 1,
		Add:   []sdk.Token{{ID: "t8", Node: "act", Status: sdk.Ready}},
		Set:   map[string]any{"classify": r.Outcome.Output},
		Trace: []sdk.Event{{Type: sdk.Exit, Node: "classify"}, {Type: sdk.Enter, Node: "act"}}}, nil
}

// benchRunaway measures what a guest stuck in an endless loop costs the
// host: how long past its deadline the call ends (overshoot-ms, the worst
// of b.N calls) and how long a garbage collection forced while the guest
// spins takes (gc-ms, the worst). The targets (DESIGN §9, issue 11) are
// under 10 ms each; no test asserts them.
func benchRunaway(b *testing.B) {
	ctx := context.Background()
	const timeout = 50 * time.Millisecond
	const pkg = "testdata/plugins/misbehave"
	// What the collection must mark is the process's live heap, and the
	// earlier sub-benchmarks leave their compiled modules in memory: free
	// them, so that gc-ms measures this guest and not what ran before.
	if err := wasm.Release(ctx); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	m, err := wasm.Open(ctx, wasm.Config{Name: "misbehave", Path: plugintest.Wasm(b, pkg)})
	if err != nil {
		b.Fatal(err)
	}
	info, err := plugin.Describe(ctx, "misbehave", m)
	if err != nil {
		b.Fatal(err)
	}
	c := plugin.NewClient("misbehave", m, info)
	defer c.Close(ctx)
	mode := func(s string) *sdk.Comparison { return &sdk.Comparison{Config: map[string]any{"mode": s}} }
	var overshoot, gcPause, gcIdle, gcStop time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// A ready instance, so that the deadline covers the loop alone.
		b.StopTimer()
		if _, err := c.Check(ctx, mode("ok")); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		gc := make(chan time.Duration, 1)
		var stop stopLatency
		time.AfterFunc(timeout/2, func() {
			stop.begin()
			start := time.Now()
			runtime.GC()
			gc <- time.Since(start)
			gcStop = max(gcStop, stop.worst())
		})
		start := time.Now()
		// The caller's deadline rather than Config.CallTimeout: the warm-up
		// call must not be held to 50 ms on a loaded machine.
		lctx, cancel := context.WithTimeout(ctx, timeout)
		_, err := c.Check(lctx, mode("loop"))
		elapsed := time.Since(start)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			b.Fatalf("loop: %v, want a timeout", err)
		}
		overshoot = max(overshoot, elapsed-timeout)
		gcPause = max(gcPause, <-gc) // also orders gcStop's write before its read
		// The same collection with no guest running, for comparison on a
		// busy machine.
		b.StopTimer()
		start = time.Now()
		runtime.GC()
		gcIdle = max(gcIdle, time.Since(start))
		b.StartTimer()
	}
	b.ReportMetric(float64(overshoot)/1e6, "overshoot-ms")
	b.ReportMetric(float64(gcPause)/1e6, "gc-ms")
	b.ReportMetric(float64(gcIdle)/1e6, "gc-idle-ms")
	b.ReportMetric(float64(gcStop)/1e6, "gc-stop-ms")
}

// stopLatency reads the runtime's histogram of how long stopping the world
// for a garbage collection took: what a goroutine that does not reach a
// safe point (a guest spinning in machine code) delays. gc-ms, the whole
// collection, also holds the marking, which a busy machine and the spinning
// guest's occupied thread stretch without the guest blocking anything.
type stopLatency struct{ before []uint64 }

const stopMetric = "/sched/pauses/stopping/gc:seconds"

func (s *stopLatency) read() *metrics.Float64Histogram {
	m := []metrics.Sample{{Name: stopMetric}}
	metrics.Read(m)
	if m[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	return m[0].Value.Float64Histogram()
}

func (s *stopLatency) begin() {
	if h := s.read(); h != nil {
		s.before = slices.Clone(h.Counts)
	}
}

// worst is the upper bound of the longest stop since begin (the
// histogram's bucket), 0 when there was none or the metric is missing.
func (s *stopLatency) worst() time.Duration {
	h := s.read()
	if h == nil || len(h.Counts) != len(s.before) {
		return 0
	}
	for i := len(h.Counts) - 1; i >= 0; i-- {
		if h.Counts[i] > s.before[i] {
			if math.IsInf(h.Buckets[i+1], 1) {
				return time.Duration(h.Buckets[i] * 1e9)
			}
			return time.Duration(h.Buckets[i+1] * 1e9)
		}
	}
	return 0
}

func BenchmarkPluginLoad(b *testing.B) {
	ctx := context.Background()
	path := plugintest.Wasm(b, echoPkg)
	native := plugintest.Native(b, echoPkg)
	// Beside the wall time, cpu-ns/op: the CPU time of this process per
	// load (the timer's pauses included, which are short), which a busy
	// machine inflates far less.
	load := func(b *testing.B, open func() (plugin.Conn, error)) {
		b.ReportAllocs()
		cpu := cpuTime(0)
		defer func() {
			if cpu >= 0 {
				b.ReportMetric(float64(cpuTime(0)-cpu)/float64(b.N), "cpu-ns/op")
			}
		}()
		for i := 0; i < b.N; i++ {
			conn, err := open()
			if err != nil {
				b.Fatal(err)
			}
			if _, err := plugin.Describe(ctx, "echo-provider", conn); err != nil {
				b.Fatal(err)
			}
			conn.Close(ctx)
		}
	}
	b.Run("wasm-cold", func(b *testing.B) {
		load(b, func() (plugin.Conn, error) {
			b.StopTimer()
			if err := wasm.Release(ctx); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			return wasm.Open(ctx, wasm.Config{Name: "echo-provider", Path: path})
		})
	})
	// As a new process would: nothing compiled in memory, the disk
	// cache warm.
	b.Run("wasm-cached", func(b *testing.B) {
		cache := b.TempDir()
		warm, err := wasm.Open(ctx, wasm.Config{Name: "echo-provider", Path: path, CacheDir: cache})
		if err != nil {
			b.Fatal(err)
		}
		warm.Close(ctx)
		b.ResetTimer()
		load(b, func() (plugin.Conn, error) {
			b.StopTimer()
			if err := wasm.Release(ctx); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			return wasm.Open(ctx, wasm.Config{Name: "echo-provider", Path: path, CacheDir: cache})
		})
	})
	// A second Open in the same process (a replay worker, an evolve
	// probe): the compiled module is shared, only an instance is made.
	b.Run("wasm-reopen", func(b *testing.B) {
		cache := b.TempDir()
		first, err := wasm.Open(ctx, wasm.Config{Name: "echo-provider", Path: path, CacheDir: cache})
		if err != nil {
			b.Fatal(err)
		}
		defer first.Close(ctx)
		b.ResetTimer()
		load(b, func() (plugin.Conn, error) {
			return wasm.Open(ctx, wasm.Config{Name: "echo-provider", Path: path, CacheDir: cache})
		})
	})
	b.Run("process", func(b *testing.B) {
		load(b, func() (plugin.Conn, error) {
			return process.Open(ctx, process.Config{Name: "echo-provider", Command: []string{native}})
		})
	})
	// Pinned: the binary is hashed and executed from the verified bytes.
	b.Run("process-pinned", func(b *testing.B) {
		sum := plugintest.SHA256(b, native)
		load(b, func() (plugin.Conn, error) {
			return process.Open(ctx, process.Config{Name: "echo-provider", Command: []string{native}, SHA256: sum})
		})
	})
}
