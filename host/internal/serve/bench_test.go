package serve_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
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
// the p99 latency.
func BenchmarkServe(b *testing.B) {
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
