package proxy_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/proxy"
)

// TestLoadReplay runs 100 concurrent clients against the proxy in replay
// mode with RecordReplays, each in its own task: no request fails and
// every call is recorded
// (each task holds exactly the executions its client made). It makes 20
// requests per client by default; SEXTANT_PROXY_LOAD=60s runs each
// client for that long instead (the load test of the issue). Latency
// percentiles are logged, never asserted.
func TestLoadReplay(t *testing.T) {
	const clients = 100
	perClient, until := 20, time.Duration(0)
	if v := os.Getenv("SEXTANT_PROXY_LOAD"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("SEXTANT_PROXY_LOAD: %v", err)
		}
		until = d
	} else if testing.Short() {
		perClient = 3
	}
	up := newUpstream(t)
	_, ps := serverConfig(t, up)
	st := openStore(t, t.TempDir())
	live := serve(t, proxy.Config{Store: st, Providers: ps.Providers, Prices: ps.Prices, Upstreams: ps.ups, Secrets: ps.secrets})
	const distinct = 8
	bodies := make([]string, distinct)
	for i := range bodies {
		bodies[i] = fmt.Sprintf(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"load question %d"}]}`, i)
		if resp, b := post(t, live.URL+proxy.RouteChatCompletions, bodies[i], nil); resp.StatusCode != 200 {
			t.Fatalf("record: %d %s", resp.StatusCode, b)
		}
	}
	up.Close()
	srv := serve(t, proxy.Config{Store: st, Replay: true, RecordReplays: true})
	url := srv.URL + proxy.RouteChatCompletions
	tr := &http.Transport{MaxIdleConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		latencies []time.Duration
		made      = make([]int, clients)
		errs      []string
	)
	deadline := time.Now().Add(until)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for i := 0; until > 0 && time.Now().Before(deadline) || until == 0 && i < perClient; i++ {
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader(bodies[(c+i)%distinct]))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set(proxy.HeaderTask, fmt.Sprintf("load-%03d", c))
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					mu.Lock()
					errs = append(errs, err.Error())
					mu.Unlock()
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mine = append(mine, time.Since(t0))
				made[c]++
				if resp.StatusCode != 200 || resp.Header.Get(proxy.HeaderRecorded) != "true" {
					mu.Lock()
					errs = append(errs, fmt.Sprintf("client %d: status %d, recorded %q", c, resp.StatusCode, resp.Header.Get(proxy.HeaderRecorded)))
					mu.Unlock()
					return
				}
			}
			mu.Lock()
			latencies = append(latencies, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d failures, first: %s", len(errs), errs[0])
	}
	total := 0
	for c := range clients {
		tree, err := st.Tree(context.Background(), fmt.Sprintf("load-%03d", c))
		if err != nil {
			t.Fatal(err)
		}
		if len(tree.Executions) != made[c] {
			t.Errorf("task load-%03d holds %d executions, want %d (one per call)", c, len(tree.Executions), made[c])
		}
		total += made[c]
	}
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	pct := func(p float64) time.Duration { return latencies[int(p*float64(len(latencies)-1))] }
	t.Logf("%d clients, %d requests, all answered and recorded; latency p50 %s p90 %s p99 %s max %s",
		clients, total, pct(0.50), pct(0.90), pct(0.99), latencies[len(latencies)-1])
}
