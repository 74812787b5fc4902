package proxy_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/proxy"
)

// BenchmarkServe/proxy-replay measures recorded answers through the proxy
// over real HTTP (keep-alive connections, 4×GOMAXPROCS parallel clients):
// each request is read, put in canonical form, hashed and answered with
// its recording's bytes; a replaying proxy stores nothing by default.
// static-baseline is the floor beside it: a plain net/http handler that
// reads the same bodies and answers each with the same recorded bytes
// and headers, from a map, with the same client. proxy-record forwards
// the same bodies live to a local fake upstream and records each call
// (a task, an execution, a span and a recording), beside
// forward-baseline, a plain net/http handler that forwards them to the
// same upstream and copies its answer back. The rows' ratios are what
// the proxy costs; their absolute figures move with the machine.
func BenchmarkServe(b *testing.B) {
	bodies := chatBodies()
	b.Run("static-baseline", func(b *testing.B) {
		up := newUpstream(b)
		_, ps := serverConfig(b, up)
		live := serve(b, ps.live(openStore(b, b.TempDir())))
		answers := make(map[string][]byte, len(bodies))
		var ct string
		for _, body := range bodies {
			resp, answer := post(b, live.URL+proxy.RouteChatCompletions, body, nil)
			if resp.StatusCode != 200 {
				b.Fatalf("record: %d %s", resp.StatusCode, answer)
			}
			answers[body], ct = answer, resp.Header.Get("Content-Type")
		}
		static := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, err := io.ReadAll(r.Body)
			answer, ok := answers[string(body)]
			if err != nil || !ok {
				http.Error(w, "unknown body", http.StatusNotFound)
				return
			}
			h := w.Header()
			h.Set("Content-Type", ct)
			h.Set("Content-Length", fmt.Sprint(len(answer)))
			h.Set(proxy.HeaderRecorded, "true")
			_, _ = w.Write(answer)
		}))
		b.Cleanup(static.Close)
		replayBench(b, static.URL+proxy.RouteChatCompletions, bodies)
	})
	b.Run("proxy-replay", func(b *testing.B) {
		up := newUpstream(b)
		_, ps := serverConfig(b, up)
		st := openStore(b, b.TempDir())
		live := serve(b, ps.live(st))
		for _, body := range bodies {
			if resp, answer := post(b, live.URL+proxy.RouteChatCompletions, body, nil); resp.StatusCode != 200 {
				b.Fatalf("record: %d %s", resp.StatusCode, answer)
			}
		}
		up.Close()
		replayBench(b, serve(b, proxy.Config{Store: st, Replay: true}).URL+proxy.RouteChatCompletions, bodies)
	})
	b.Run("forward-baseline", func(b *testing.B) {
		up := newUpstream(b)
		tr := &http.Transport{MaxIdleConnsPerHost: 64}
		b.Cleanup(tr.CloseIdleConnections)
		client := &http.Client{Transport: tr}
		fwd := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			req, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, up.URL+"/v1/chat/completions", r.Body)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer sk-upstream")
			resp, err := client.Do(req)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			defer resp.Body.Close()
			w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
			w.WriteHeader(resp.StatusCode)
			_, _ = io.Copy(w, resp.Body)
		}))
		b.Cleanup(fwd.Close)
		liveBench(b, fwd.URL+proxy.RouteChatCompletions, bodies)
	})
	b.Run("proxy-record", func(b *testing.B) {
		up := newUpstream(b)
		_, ps := serverConfig(b, up)
		liveBench(b, serve(b, ps.live(openStore(b, b.TempDir()))).URL+proxy.RouteChatCompletions, bodies)
	})
	// proxy-replay-tools: a replayed chat completion whose request carries
	// tools (and a tool result) and whose recorded answer calls a tool.
	b.Run("proxy-replay-tools", func(b *testing.B) {
		up := newToolUpstream(b)
		ps := toolProviders(b, up)
		st := openStore(b, b.TempDir())
		live := serve(b, ps.live(st))
		const distinct = 16
		bodies := make([]string, distinct)
		for i := range bodies {
			bodies[i] = fmt.Sprintf(`{"model":"gpt-4o-mini","tool_choice":"auto","parallel_tool_calls":true,"temperature":0,
 "tools":[{"type":"function","function":{"name":"get_weather","description":"The current weather in a city","parameters":{"type":"object","properties":{"city":{"type":"string","description":"the city"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city"]}}},
  {"type":"function","function":{"name":"get_time","description":"The local time in a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}],
 "messages":[{"role":"system","content":"You answer with the tools. %s"},{"role":"user","content":"What is the weather in city %d?"}]}`, strings.Repeat("Be brief. ", 20), i)
			resp, body := post(b, live.URL+proxy.RouteChatCompletions, bodies[i], nil)
			if resp.StatusCode != 200 || !strings.Contains(string(body), `"tool_calls"`) {
				b.Fatalf("record: %d %s", resp.StatusCode, body)
			}
		}
		up.Close()
		replayBench(b, serve(b, proxy.Config{Store: st, Replay: true}).URL+proxy.RouteChatCompletions, bodies)
	})
}

// chatBodies are the chat completions every row asks: distinct
// questions of a typical size.
func chatBodies() []string {
	const distinct = 16
	bodies := make([]string, distinct)
	for i := range bodies {
		bodies[i] = fmt.Sprintf(`{"model":"gpt-4o-mini","messages":[{"role":"system","content":"Answer briefly."},{"role":"user","content":"question %d: %s"}]}`, i, strings.Repeat("x", 200))
	}
	return bodies
}

// replayBench posts bodies to url from 4×GOMAXPROCS parallel clients
// (agents' test suites run many at once) over keep-alive connections,
// each answer a 200 from a recording.
func replayBench(b *testing.B, url string, bodies []string) {
	parallelBench(b, url, bodies, true)
}

// liveBench is replayBench for answers from an upstream.
func liveBench(b *testing.B, url string, bodies []string) {
	parallelBench(b, url, bodies, false)
}

func parallelBench(b *testing.B, url string, bodies []string, replayed bool) {
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	client := &http.Client{Transport: tr}
	b.Cleanup(tr.CloseIdleConnections)
	b.SetParallelism(4)
	b.ResetTimer()
	cpu0 := cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader(bodies[i%len(bodies)]))
			req.Header.Set("Content-Type", "application/json")
			i++
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || replayed && resp.Header.Get(proxy.HeaderRecorded) != "true" {
				b.Errorf("status %d, recorded %q", resp.StatusCode, resp.Header.Get(proxy.HeaderRecorded))
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	// CPU per request, client included: on a shared machine wall
	// time measures the neighbours; 2 cores serve 2e6/cpu-µs req/s.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e3, "cpu-µs/req")
}
