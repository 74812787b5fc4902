package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/serve"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// BenchmarkServe/task-list: 100 concurrent clients page through the task
// list of a store of 2 000 tasks over real HTTP; reports requests/s and
// the p99 latency. BenchmarkServe/metrics: GET /api/v1/metrics (its
// default 2 000 newest tasks) of a store of 100 000 tasks.
// BenchmarkServe/task-list-100k: 16 concurrent clients list that store
// (newest first, by status, by pipeline and status, by tag, a next page,
// by reward); reports requests/s and the p99 latency.
func BenchmarkServe(b *testing.B) {
	b.Run("metrics", func(b *testing.B) {
		base, stop := serveLarge(b)
		defer stop()
		b.ResetTimer()
		cpu0 := cpuTime()
		for b.Loop() {
			var m struct {
				Metrics []serve.MetricRow `json:"metrics"`
			}
			getJSON(b, base+"/api/v1/metrics", &m)
			if len(m.Metrics) == 0 {
				b.Fatal("no metrics")
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/call")
		// The process's CPU (server and client) per call: on a shared
		// machine wall time mostly measures the neighbours.
		b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/call")
	})
	b.Run("task-list-100k", func(b *testing.B) {
		base, stop := serveLarge(b)
		defer stop()
		var first serve.TaskPage
		getJSON(b, base+"/api/v1/tasks?limit=50", &first)
		if first.NextCursor == "" || len(first.Tasks) != 50 {
			b.Fatalf("first page: %d tasks, cursor %q", len(first.Tasks), first.NextCursor)
		}
		paths := []string{
			"/api/v1/tasks?limit=50",
			"/api/v1/tasks?limit=50&status=failed",
			"/api/v1/tasks?limit=20&pipeline=p2&status=waiting",
			"/api/v1/tasks?limit=20&status=running",
			"/api/v1/tasks?limit=50&tag=even",
			"/api/v1/tasks?limit=50&cursor=" + first.NextCursor,
			"/api/v1/tasks?limit=20&min_reward=0.5",
		}
		loadTest(b, base, 16, paths)
	})

	b.Run("task-list", func(b *testing.B) {
		ctx := context.Background()
		st, err := store.Open(ctx, filepath.Join(b.TempDir(), ".sextant"), store.NewConfig().WithLogger(quiet()))
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for i := range 2000 {
			if err := st.CreateTask(ctx, &store.Task{ID: fmt.Sprintf("t%05d", i), Pipeline: []string{"a", "b"}[i%2],
				Tags: []string{"bench"}, Created: t0.Add(time.Duration(i) * time.Second), Status: store.StatusCompleted}); err != nil {
				b.Fatal(err)
			}
		}
		srv, err := serve.New(serve.Options{Store: st, Addr: "127.0.0.1:0", Logger: quiet()})
		if err != nil {
			b.Fatal(err)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		sctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- srv.Serve(sctx, l) }()
		defer func() { cancel(); <-done }()
		base := "http://" + l.Addr().String()
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}}
		var mu sync.Mutex
		var lat []time.Duration
		var failed int
		b.SetParallelism((100 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
		b.ResetTimer()
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			var mine []time.Duration
			i := 0
			for pb.Next() {
				i++
				t := time.Now()
				resp, err := client.Get(base + []string{"/api/v1/tasks?limit=50", "/api/v1/tasks?limit=20&pipeline=a", "/api/v1/tasks?tag=bench&limit=10"}[i%3])
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				mine = append(mine, time.Since(t))
				if err != nil {
					mu.Lock()
					failed++
					mu.Unlock()
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
		elapsed := time.Since(start)
		b.StopTimer()
		if failed > 0 {
			b.Fatalf("%d requests failed", failed)
		}
		slices.Sort(lat)
		if len(lat) > 0 {
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "req/s")
		}
	})
}

// largeTasks is the size of the store BenchmarkServe/metrics and
// task-list-100k read.
const largeTasks = 100_000

var large struct {
	once sync.Once
	dir  string
	err  error
}

// TestMain removes the large benchmark store, built once per process.
func TestMain(m *testing.M) {
	code := m.Run()
	if large.dir != "" {
		os.RemoveAll(large.dir)
	}
	os.Exit(code)
}

// largeStore builds, once per process, a store of largeTasks tasks over
// 100 days in four pipelines, each task with a live execution (a run
// span and a provider call with usage and cost), a third of them with a
// reward, imported through the store's batch import.
func largeStore(b *testing.B) string {
	large.once.Do(func() {
		dir, err := os.MkdirTemp("", "sextant-bench-*")
		if err != nil {
			large.err = err
			return
		}
		large.dir = dir
		large.err = buildLarge(filepath.Join(dir, ".sextant"))
	})
	if large.err != nil {
		b.Fatal(large.err)
	}
	return filepath.Join(large.dir, ".sextant")
}

func buildLarge(dir string) error {
	ctx := context.Background()
	f, err := os.Create(filepath.Join(filepath.Dir(dir), "tasks.jsonl"))
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	line := func(typ string, v any) {
		b, _ := json.Marshal(v)
		w.WriteString(`{"type":"` + typ + `",`)
		w.Write(b[1:])
		w.WriteByte('\n')
	}
	w.WriteString(`{"type":"header","format":"sextant-export","version":1}` + "\n")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	statuses := []store.Status{store.StatusCompleted, store.StatusCompleted, store.StatusCompleted, store.StatusFailed,
		store.StatusCompleted, store.StatusWaiting, store.StatusCompleted, store.StatusCompleted, store.StatusCompleted, store.StatusCompleted}
	for i := range largeTasks {
		id := fmt.Sprintf("t%06d", i)
		created := t0.Add(time.Duration(i) * 86400 * time.Second / 1000) // 1 000 a day
		st := statuses[i%len(statuses)]
		if i%997 == 0 {
			st = store.StatusRunning
		}
		tags := []string{"bench"}
		if i%2 == 0 {
			tags = append(tags, "even")
		}
		strat := store.StrategyRef{Name: "s", Version: fmt.Sprintf("1.%d", i/50_000)}
		line("task", store.Task{ID: id, Pipeline: fmt.Sprintf("p%d", i%4), Input: json.RawMessage(`{"body":"mail ` + id + `"}`),
			Tags: tags, Status: st, Created: created, Strategy: strat})
		ex := store.Execution{Task: id, ID: "e1", Strategy: strat, Mode: "live", Status: st, Started: created.Add(time.Second),
			TraceID: store.TraceIDFor(id, "e1")}
		if st != store.StatusRunning && st != store.StatusWaiting {
			ex.Ended = ex.Started.Add(time.Duration(1000+i%777) * time.Millisecond)
		}
		line("execution", ex)
		line("span", store.Span{Task: id, Execution: "e1", Seq: 1, TraceID: ex.TraceID, SpanID: store.SpanIDFor(id, "e1", 1), Name: "run", Start: ex.Started, End: ex.Started.Add(time.Second)})
		line("span", store.Span{Task: id, Execution: "e1", Seq: 2, TraceID: ex.TraceID, SpanID: store.SpanIDFor(id, "e1", 2),
			Name: "chat gpt-4o-mini", Kind: store.SpanClient,
			Start: ex.Started, End: ex.Started.Add(300 * time.Millisecond),
			Attributes: store.Attributes{store.AttrGenAIUsageInputTokens: store.Int(int64(400 + i%50)),
				store.AttrGenAIUsageOutputTokens: store.Int(37), "sextant.cost_usd": store.Float(0.00012 * float64(1+i%3))}})
		if i%3 == 0 {
			line("reward", store.Reward{Task: id, Seq: 1, Value: []float64{1, 0.5, -1, 0.25}[i%4], Created: created.Add(time.Minute)})
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	st, err := store.Open(ctx, dir, store.NewConfig().WithLogger(quiet()))
	if err != nil {
		return err
	}
	if _, err := st.Import(ctx, f, "bench"); err != nil {
		st.Close()
		return err
	}
	return st.Close()
}

// serveLarge serves the large store over real HTTP.
func serveLarge(b *testing.B) (base string, stop func()) {
	ctx := context.Background()
	st, err := store.Open(ctx, largeStore(b), store.NewConfig().WithLogger(quiet()))
	if err != nil {
		b.Fatal(err)
	}
	srv, err := serve.New(serve.Options{Store: st, Addr: "127.0.0.1:0", Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, l) }()
	return "http://" + l.Addr().String(), func() { cancel(); <-done; st.Close() }
}

func getJSON(b *testing.B, url string, v any) {
	resp, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		body, _ := io.ReadAll(resp.Body)
		b.Fatalf("GET %s: status %d: %s", url, resp.StatusCode, body)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		b.Fatal(err)
	}
}

// loadTest has clients concurrent clients GET paths in turn; it reports
// requests/s and the p99 latency.
func loadTest(b *testing.B, base string, clients int, paths []string) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * clients}}
	var mu sync.Mutex
	var lat []time.Duration
	var failed error
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((clients + procs - 1) / procs)
	b.ResetTimer()
	start := time.Now()
	cpu0 := cpuTime()
	var n atomicInt
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		i := n.next()
		for pb.Next() {
			i++
			t := time.Now()
			resp, err := client.Get(base + paths[i%len(paths)])
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					err = fmt.Errorf("GET %s: status %d", paths[i%len(paths)], resp.StatusCode)
				}
			}
			mine = append(mine, time.Since(t))
			if err != nil {
				mu.Lock()
				failed = err
				mu.Unlock()
			}
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	cpu := cpuTime() - cpu0
	b.StopTimer()
	if failed != nil {
		b.Fatal(failed)
	}
	slices.Sort(lat)
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "req/s")
		b.ReportMetric(float64(cpu.Microseconds())/1000/float64(len(lat)), "cpu-ms/req")
	}
}

type atomicInt struct {
	mu sync.Mutex
	n  int
}

func (a *atomicInt) next() int { a.mu.Lock(); defer a.mu.Unlock(); a.n++; return a.n }
