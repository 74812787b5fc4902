package serve_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/serve"
)

// zerosPrefix opens zeros' body: four values, the array the fifth.
const zerosPrefix = `{"pipeline":"email-triage","input":{"x":[`

// zeros is a run request whose input holds n small values: a body of
// 2n bytes that decodes to some 80n.
func zeros(n int) string {
	return zerosPrefix + strings.Repeat("0,", n) + `0]}}`
}

// TestBodyBounds: a body of many small values, or nested deep, is
// refused 413 on every route that takes a JSON body (an import's JSONL
// too), naming the byte
// where it went past the limit, before anything is decoded or run; an
// ordinary body is still served.
func TestBodyBounds(t *testing.T) {
	e := newEnv(t, "127.0.0.1:0")
	var charged []int64
	e.srv.SetDecodeBudget(serve.DecodeBudget, func(used int64) { charged = append(charged, used) })
	run := map[string]any{"pipeline": "email-triage", "input": readJSON(t, filepath.Join(e.pipelines, "email-triage", "inputs", "meeting.json"))}
	e.do("POST", "/api/v1/runs", run).want(t, 200)
	if len(charged) != 1 || charged[0] <= 0 {
		t.Fatalf("an ordinary run charged %v", charged)
	}
	charged = nil

	many := zeros(600_000) // 1.2 MB, under the 8 MiB cap
	deep := zerosPrefix[:len(zerosPrefix)-1] + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}}`
	const values = (8 << 20) / 16
	// The comma past the limit, and the bracket 129 deep (two objects
	// around the arrays).
	manyAt, deepAt := len(zerosPrefix)+2*(values-5)+1, len(zerosPrefix)-1+126
	for _, path := range []string{"/api/v1/runs", "/api/v1/tasks/t1/rewards", "/api/v1/tasks/t1/messages",
		"/api/v1/tasks/t1/cancel", "/api/v1/tasks/t1/resume", "/api/v1/tasks/t1/vars", "/api/v1/tasks/t1/retry",
		"/api/v1/signals", "/api/v1/comparisons", "/api/v1/reviews/r1/approve", "/api/v1/pipelines/email-triage/promote",
		"/api/v1/import"} {
		ct := "Content-Type: application/json"
		if path == "/api/v1/import" { // a JSONL export, here of one line
			ct = "Content-Type: application/x-ndjson"
		}
		for _, c := range []struct{ body, msg string }{
			{many, fmt.Sprintf("request body: byte %d: more than %d JSON values", manyAt, values)},
			{deep, fmt.Sprintf("request body: byte %d: arrays and objects nested deeper than 128", deepAt)},
		} {
			a := e.do("POST", path, c.body, ct).want(t, 413)
			if code := a.errorCode(t); code != serve.CodeTooLarge || !strings.Contains(string(a.body), c.msg) {
				t.Errorf("%s: %s %s, want %q", path, code, a.body, c.msg)
			}
		}
	}
	if len(charged) != 0 {
		t.Fatalf("refused bodies were charged: %v", charged)
	}
	if tasks := e.do("GET", "/api/v1/tasks", nil).want(t, 200); strings.Count(string(tasks.body), `"id"`) != 1 {
		t.Fatalf("refused runs stored tasks: %s", tasks.body)
	}
}

// TestDecodeBudget: the API bodies being served hold no more than the
// decode budget charged together: two of a few MB of small values are
// held mid-request, a third is refused 503 with Retry-After at once, and
// once the two are answered the budget is free and the third is served.
func TestDecodeBudget(t *testing.T) {
	e := newEnv(t, "127.0.0.1:0")
	// ~1 MB, charged ~41 MB, of a pipeline the server lacks (400).
	body := strings.Replace(zeros(500_000), "email-triage", "nope", 1)
	const limit = 100 << 20
	var (
		mu      sync.Mutex
		peak    int64
		holding = make(chan struct{}, 2)
		release = make(chan struct{})
		held    = 0
	)
	e.srv.SetDecodeBudget(limit, func(used int64) {
		mu.Lock()
		peak = max(peak, used)
		hold := held < 2
		held++
		mu.Unlock()
		if hold {
			holding <- struct{}{}
			<-release
		}
	})
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	defer open() // a failure below leaves no request held
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { e.do("POST", "/api/v1/runs", body).want(t, 400) })
	}
	<-holding
	<-holding
	busy := e.do("POST", "/api/v1/runs", body).want(t, 503)
	if code := busy.errorCode(t); code != serve.CodeUnavailable || busy.header.Get("Retry-After") == "" {
		t.Fatalf("body past the budget: code %q, Retry-After %q", code, busy.header.Get("Retry-After"))
	}
	open()
	wg.Wait()
	if used := e.srv.DecodeUsed(); used != 0 {
		t.Fatalf("answered requests still hold %d charged", used)
	}
	e.do("POST", "/api/v1/runs", body).want(t, 400)
	if peak > limit || peak < 2*int64(len(body)) {
		t.Fatalf("peak charged %d, want between the two bodies' %d and the budget %d", peak, 2*len(body), limit)
	}
}

// heldBody is a request body that, once it has given the server want
// bytes, says so on held and waits for release before giving more: the
// server asking for more means it has charged what it holds.
type heldBody struct {
	io.ReadCloser
	n, want int
	held    chan<- struct{}
	release <-chan struct{}
	waited  bool
}

func (b *heldBody) Read(p []byte) (int, error) {
	if b.n >= b.want && !b.waited {
		b.waited = true
		b.held <- struct{}{}
		<-b.release
	}
	n, err := b.ReadCloser.Read(p)
	b.n += n
	return n, err
}

// TestDecodeBudgetRaw: the bytes of a body are charged to the decode
// budget before they are read, as the buffer grows, whether the client
// sent its length or streams it chunked, on the API's routes and the
// sink's. Eight bodies of 400 KB held mid-read, 256 KiB in, against a
// budget of 1 MiB: at most two are held, the others refused at
// once with a 503, Retry-After and Connection: close, and what is charged
// is never past the budget. Released, the held ones are served.
func TestDecodeBudgetRaw(t *testing.T) {
	const limit, calls, pad = 1 << 20, 8, 400_000
	body := `"` + strings.Repeat("x", pad) + `"` // a JSON string: each route answers 400
	for _, c := range []struct {
		path    string
		chunked bool
	}{{"/api/v1/runs", false}, {"/api/v1/runs", true}, {serve.SinkSpansRoute, false}, {serve.SinkSpansRoute, true}} {
		t.Run(fmt.Sprintf("%s chunked=%v", c.path, c.chunked), func(t *testing.T) {
			e := newEnv(t, "127.0.0.1:0", func(o *serve.Options) { o.Handlers = serve.SinkHandlers(o.Store) })
			e.srv.SetDecodeBudget(limit, func(int64) {})
			// Held at the read after its buffer, full at 256 KiB, grew
			// (a byte past it has come), a body is charged the buffer it
			// grew to: its length (400 KB) when sent, else 512 KiB.
			const want = 256<<10 + 1
			held := make(chan struct{}, calls)
			release := make(chan struct{})
			var once sync.Once
			free := func() { once.Do(func() { close(release) }) }
			defer free()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				orig := r.Body
				r.Body = &heldBody{ReadCloser: orig, want: want, held: held, release: release}
				e.srv.Handler().ServeHTTP(w, r)
				// A refused body's answer goes out now, and what is left
				// of it is read here: the client never writes into a
				// closed connection.
				w.(http.Flusher).Flush()
				_, _ = io.Copy(io.Discard, orig)
			}))
			defer srv.Close()
			type result struct {
				status int
				header http.Header
				close  bool
			}
			results := make(chan result, calls)
			for range calls {
				go func() {
					var rd io.Reader = strings.NewReader(body)
					if c.chunked {
						rd = io.MultiReader(rd) // no length known
					}
					req, _ := http.NewRequest("POST", srv.URL+c.path, rd)
					req.Header.Set("Content-Type", "application/json")
					resp, err := srv.Client().Do(req)
					if err != nil {
						t.Error(err)
						results <- result{}
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					results <- result{resp.StatusCode, resp.Header, resp.Close}
				}()
			}
			// Each call is held or answered: a 503 while the others are
			// held.
			holding, refused := 0, 0
			for holding+refused < calls {
				select {
				case <-held:
					holding++
				case r := <-results:
					if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" || !r.close {
						t.Errorf("call answered while others are held: %d %v close %v, want a 503 with Retry-After and Connection: close", r.status, r.header, r.close)
					}
					refused++
				}
			}
			if used := e.srv.DecodeUsed(); holding == 0 || holding > 2 || used > limit {
				t.Errorf("%d bodies held charged %d, want one or two within the budget %d", holding, used, limit)
			}
			free()
			for range holding {
				if r := <-results; r.status != http.StatusBadRequest {
					t.Errorf("held call answered %d, want 400", r.status)
				}
			}
			if used := e.srv.DecodeUsed(); used != 0 {
				t.Fatalf("answered requests still hold %d charged", used)
			}
		})
	}
}

// TestStalledBodies: clients that announce 8 MiB bodies and stall after
// 1 000 bytes hold of the decode budget only what came and one growth
// step: forty of them — past the 32 whose announced lengths would fill
// its 256 MiB — are all held mid-read, and meanwhile an ordinary request
// is served, not refused 503. Freed (their clients give up), they give
// back all they held.
func TestStalledBodies(t *testing.T) {
	e := newEnv(t, "127.0.0.1:0")
	const calls, sent = 40, 1000
	held := make(chan struct{}, calls)
	served := make(chan struct{}, calls)
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The server asking for more than the 1 000 bytes sent means
		// it charged the buffer it reads them into.
		r.Body = &heldBody{ReadCloser: r.Body, want: sent, held: held, release: release}
		e.srv.Handler().ServeHTTP(w, r)
		served <- struct{}{}
	}))
	t.Cleanup(srv.Close)
	writers := make([]*io.PipeWriter, calls)
	stall := func() { // the clients give up
		free()
		for _, pw := range writers {
			if pw != nil {
				pw.CloseWithError(errors.New("client gave up"))
			}
		}
	}
	t.Cleanup(stall) // before the server closes (cleanups run last first)
	prefix := `{"pipeline":"nope","input":{"pad":"`
	answers := make(chan int, calls)
	for i := range calls {
		pr, pw := io.Pipe()
		writers[i] = pw
		go func() { _, _ = io.WriteString(pw, prefix+strings.Repeat("x", sent-len(prefix))) }()
		req, err := http.NewRequest("POST", srv.URL+"/api/v1/runs", pr)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = serve.DefaultMaxBody
		req.Header.Set("Content-Type", "application/json")
		go func() {
			resp, err := srv.Client().Do(req)
			if err != nil {
				answers <- 0
				return
			}
			resp.Body.Close()
			answers <- resp.StatusCode
		}()
	}
	for range calls {
		select {
		case <-held:
		case status := <-answers:
			t.Fatalf("a stalled body was answered %d while the others stall, want every one held mid-read", status)
		}
	}
	if used := e.srv.DecodeUsed(); used > calls*4096 {
		t.Errorf("%d stalled bodies of %d bytes hold %d charged, want at most the 4 KiB first buffer each", calls, sent, used)
	}
	small := e.do("POST", "/api/v1/runs", `{"pipeline":"nope"}`)
	if small.status != http.StatusBadRequest {
		t.Errorf("an ordinary request among stalled bodies: %d %s, want 400 (no such pipeline)", small.status, small.body)
	}
	stall()
	for range calls {
		<-served
		<-answers
	}
	if used := e.srv.DecodeUsed(); used != 0 {
		t.Fatalf("abandoned bodies still hold %d charged", used)
	}
}

// TestEmptyBodyNeedsNoBudget: with the decode budget spent by a request
// held mid-decode, a body of a few bytes is refused 503, but a cancel
// with no body — Content-Length: 0, no length at all, or chunked and
// ending at once — needs none of it and cancels its task.
func TestEmptyBodyNeedsNoBudget(t *testing.T) {
	e := newEnv(t, "127.0.0.1:0")
	var armed atomic.Bool
	holding, release := make(chan struct{}), make(chan struct{})
	e.srv.SetDecodeBudget(64<<10, func(int64) {
		if armed.CompareAndSwap(true, false) {
			close(holding)
			<-release
		}
	})
	input := readJSON(t, filepath.Join(e.pipelines, "email-triage", "inputs", "invoice.json"))
	heads := []string{"Content-Length: 0\r\n", "", "Transfer-Encoding: chunked\r\n"}
	bodies := []string{"", "", "0\r\n\r\n"}
	for i := range heads {
		e.do("POST", "/api/v1/runs", map[string]any{"pipeline": "email-triage", "id": fmt.Sprint("inv-", i), "input": input}).want(t, 200)
	}

	// ~820 KB decoded, taken alone past the 64 KiB budget, and held.
	armed.Store(true)
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free()
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.do("POST", "/api/v1/runs", strings.Replace(zeros(10_000), "email-triage", "nope", 1)).want(t, 400)
	}()
	<-holding
	e.do("POST", "/api/v1/tasks/inv-0/cancel", `{"reason":"x"}`).want(t, 503)
	for i, head := range heads {
		status := rawPost(t, e.base, fmt.Sprint("/api/v1/tasks/inv-", i, "/cancel"), head, bodies[i])
		if !strings.Contains(status, " 200 ") {
			t.Errorf("an empty cancel (%q) with the budget spent: %q, want 200", head, status)
		}
	}
	free()
	<-done
	if used := e.srv.DecodeUsed(); used != 0 {
		t.Fatalf("answered requests still hold %d charged", used)
	}
}

// rawPost sends a POST of path with the extra header lines head and the
// body as given (so that a body of no declared length can be sent) and
// returns the answer's status line.
func rawPost(t *testing.T, base, path, head, body string) string {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nConnection: close\r\n%s\r\n%s",
		path, strings.TrimPrefix(base, "http://"), head, body)
	if err != nil {
		t.Fatal(err)
	}
	status, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return status
}
