package proxy_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/proxy"
)

// BenchmarkServe/proxy-replay measures recorded answers through the proxy
// over real HTTP (keep-alive connections, GOMAXPROCS parallel clients):
// each request is decoded, hashed, answered from its recording and
// recorded as a replay execution with its span.
func BenchmarkServe(b *testing.B) {
	b.Run("proxy-replay", func(b *testing.B) {
		up := newUpstream(b)
		_, ps := serverConfig(b, up)
		st := openStore(b, b.TempDir())
		live := serve(b, proxy.Config{Store: st, Providers: ps.Providers, Prices: ps.Prices, Upstreams: ps.ups, Secrets: ps.secrets})
		const distinct = 16
		bodies := make([]string, distinct)
		for i := range bodies {
			bodies[i] = fmt.Sprintf(`{"model":"gpt-4o-mini","messages":[{"role":"system","content":"Answer briefly."},{"role":"user","content":"question %d: %s"}]}`, i, strings.Repeat("x", 200))
			if resp, body := post(b, live.URL+proxy.RouteChatCompletions, bodies[i], nil); resp.StatusCode != 200 {
				b.Fatalf("record: %d %s", resp.StatusCode, body)
			}
		}
		up.Close()
		srv := serve(b, proxy.Config{Store: st, Replay: true})
		url := srv.URL + proxy.RouteChatCompletions
		tr := &http.Transport{MaxIdleConnsPerHost: 64}
		client := &http.Client{Transport: tr}
		b.Cleanup(tr.CloseIdleConnections)
		b.ResetTimer()
		cpu0 := cpuTime()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader(bodies[i%distinct]))
				req.Header.Set("Content-Type", "application/json")
				i++
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Errorf("status %d", resp.StatusCode)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		// CPU per request, client included: on a shared machine wall
		// time measures the neighbours; 2 cores serve 2e6/cpu-µs req/s.
		b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e3, "cpu-µs/req")
	})
}
