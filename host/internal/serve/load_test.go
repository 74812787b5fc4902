package serve_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/proxy"
	"github.com/sextant-dev/sextant/host/internal/serve"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// TestLoad is the server's load run: 100 concurrent clients against one
// `sextant serve` with the recording proxy in replay mode (--replay, the
// upstream stopped) and the API's task list. Each client, in its own
// proxy task, alternates a replayed chat completion (every other one
// streamed) with a page of the task list (following next_cursor). No
// request may fail, every replayed answer must come from a recording,
// and afterwards every call must be in the store (each client's task
// holds one execution per call it made; the task list, paged to its
// end, shows every task exactly once). Latency percentiles per route are
// logged, never asserted.
//
// By default each client makes 12 requests (4 with -short);
// SEXTANT_SERVE_LOAD=60s runs every client for that long instead (the
// issue's load run: go test -run TestLoad -v ./host/serve with it set).
func TestLoad(t *testing.T) {
	const clients, distinct = 100, 8
	perClient, until := 12, time.Duration(0)
	if v := os.Getenv("SEXTANT_SERVE_LOAD"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("SEXTANT_SERVE_LOAD=%q: want a duration such as 60s", v)
		}
		until = d
	} else if testing.Short() {
		perClient = 4
	}
	e := newEnv(t, "127.0.0.1:0", withProxy(t, "", true))
	ctx := context.Background()

	// Record the answers through a proxy in record mode over the same
	// store, then stop the upstream: only recordings can answer now.
	up := newUpstream(t)
	rec := httptest.NewServer(openProxy(t, e.store, up.URL, false))
	defer rec.Close()
	bodies := make([]string, distinct)
	for i := range bodies {
		bodies[i] = fmt.Sprintf(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"load question %d"}]}`, i)
		resp, err := http.Post(rec.URL+proxy.RouteChatCompletions, "application/json", strings.NewReader(bodies[i]))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get(proxy.HeaderRecorded) != "false" {
			t.Fatalf("record call %d: %d %s", i, resp.StatusCode, b)
		}
	}
	up.Close()
	rec.Close()
	streamed := make([]string, distinct)
	for i, b := range bodies {
		streamed[i] = strings.Replace(b, `{"model"`, `{"stream":true,"model"`, 1)
	}

	tr := &http.Transport{MaxIdleConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	const (
		routeChat   = "POST /v1/chat/completions"
		routeStream = "POST /v1/chat/completions (stream)"
		routeTasks  = "GET /api/v1/tasks"
	)
	type result struct {
		route string
		took  time.Duration
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		results  = map[string][]time.Duration{}
		calls    = make([]int, clients)
		failures []string
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	// one sends one request and checks its answer; false on a failure.
	one := func(c, i int, cursor *string) (result, bool) {
		var req *http.Request
		var route string
		task := fmt.Sprintf("load-%03d", c)
		switch {
		case i%2 == 1:
			route = routeTasks
			u := e.base + "/api/v1/tasks?pipeline=proxy&limit=50"
			if *cursor != "" {
				u += "&cursor=" + *cursor
			}
			req, _ = http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		case i%4 == 2:
			route = routeStream
			req, _ = http.NewRequestWithContext(ctx, http.MethodPost, e.base+proxy.RouteChatCompletions, strings.NewReader(streamed[(c+i)%distinct]))
		default:
			route = routeChat
			req, _ = http.NewRequestWithContext(ctx, http.MethodPost, e.base+proxy.RouteChatCompletions, strings.NewReader(bodies[(c+i)%distinct]))
		}
		if req.Method == http.MethodPost {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(proxy.HeaderTask, task)
		}
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			fail("client %d: %s: %v", c, route, err)
			return result{}, false
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		took := time.Since(t0)
		if err != nil || resp.StatusCode != 200 {
			fail("client %d: %s: %d %v %s", c, route, resp.StatusCode, err, b)
			return result{}, false
		}
		switch route {
		case routeTasks:
			var page serve.TaskPage
			if err := json.Unmarshal(b, &page); err != nil || len(page.Tasks) == 0 {
				fail("client %d: task list: %v %.200s", c, err, b)
				return result{}, false
			}
			*cursor = page.NextCursor
		default:
			calls[c]++ // the proxy answered: this call must be in the store
			if resp.Header.Get(proxy.HeaderRecorded) != "true" || resp.Header.Get(proxy.HeaderTask) != task {
				fail("client %d: %s: recorded %q, task %q", c, route, resp.Header.Get(proxy.HeaderRecorded), resp.Header.Get(proxy.HeaderTask))
				return result{}, false
			}
			if route == routeStream && !streamComplete(b, "Upstream answers: load question") {
				fail("client %d: incomplete stream: %.300s", c, b)
				return result{}, false
			}
			if route == routeChat && !bytes.Contains(b, []byte("Upstream answers: load question")) {
				fail("client %d: answer: %.300s", c, b)
				return result{}, false
			}
		}
		return result{route, took}, true
	}
	start := time.Now()
	deadline := start.Add(until)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := map[string][]time.Duration{}
			cursor := ""
			for i := 0; until > 0 && time.Now().Before(deadline) || until == 0 && i < perClient; i++ {
				r, ok := one(c, i, &cursor)
				if !ok {
					break
				}
				mine[r.route] = append(mine[r.route], r.took)
			}
			mu.Lock()
			for k, v := range mine {
				results[k] = append(results[k], v...)
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if len(failures) > 0 {
		t.Fatalf("%d requests failed; first: %s", len(failures), failures[0])
	}

	// No lost recording: every answered call is an execution of its task.
	total := 0
	for c := range clients {
		tree, err := e.store.Tree(ctx, fmt.Sprintf("load-%03d", c))
		if err != nil {
			t.Fatal(err)
		}
		replayed := 0
		for _, x := range tree.Executions {
			if x.Execution.Mode == "replay" && x.Execution.Status == store.StatusCompleted {
				replayed++
			}
		}
		if replayed != calls[c] || len(tree.Executions) != calls[c] {
			t.Errorf("task load-%03d holds %d executions (%d replayed and completed), want %d (one per call)", c, len(tree.Executions), replayed, calls[c])
		}
		total += calls[c]
	}
	// The task list, paged to its end, shows each task once: the
	// recorded calls' tasks and the clients' tasks.
	seen := map[string]bool{}
	for cursor := ""; ; {
		var page serve.TaskPage
		e.do("GET", "/api/v1/tasks?pipeline=proxy&limit=37&cursor="+cursor, nil).want(t, 200).json(t, &page)
		for _, tk := range page.Tasks {
			if seen[tk.ID] {
				t.Fatalf("task %s listed twice", tk.ID)
			}
			seen[tk.ID] = true
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if len(seen) != distinct+clients {
		t.Fatalf("the task list shows %d proxy tasks, want %d", len(seen), distinct+clients)
	}

	routes := make([]string, 0, len(results))
	requests := 0
	for r, ds := range results {
		routes = append(routes, r)
		requests += len(ds)
	}
	sort.Strings(routes)
	t.Logf("%d clients for %s: %d requests (%.0f req/s), %d proxy calls replayed and recorded, none failed",
		clients, elapsed.Round(time.Millisecond), requests, float64(requests)/elapsed.Seconds(), total)
	for _, r := range routes {
		ds := results[r]
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		pct := func(p float64) time.Duration { return ds[int(p*float64(len(ds)-1))].Round(10 * time.Microsecond) }
		t.Logf("  %-36s n=%-7d p50 %-9s p90 %-9s p99 %-9s max %s", r, len(ds), pct(0.50), pct(0.90), pct(0.99), ds[len(ds)-1].Round(10*time.Microsecond))
	}
}

// streamComplete reports whether an OpenAI SSE body is whole: chunks
// whose content deltas start with prefix, a finish_reason, then [DONE].
func streamComplete(body []byte, prefix string) bool {
	var text strings.Builder
	finished, done := false, false
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta        struct{ Content string }
				FinishReason *string `json:"finish_reason"`
			}
		}
		if json.Unmarshal([]byte(data), &chunk) != nil {
			return false
		}
		for _, ch := range chunk.Choices {
			text.WriteString(ch.Delta.Content)
			finished = finished || ch.FinishReason != nil
		}
	}
	return done && finished && strings.HasPrefix(text.String(), prefix)
}
