package proxy_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/proxy"
)

// heldBody is a request body that, once it has given the proxy want
// bytes, says so on held and waits for release before giving more: the
// proxy asking for more means it has charged what it holds.
type heldBody struct {
	io.ReadCloser
	id      int
	n, want int
	held    chan<- int
	release <-chan struct{}
	waited  bool
}

func (b *heldBody) Read(p []byte) (int, error) {
	if b.n >= b.want && !b.waited {
		b.waited = true
		b.held <- b.id
		<-b.release
	}
	n, err := b.ReadCloser.Read(p)
	b.n += n
	return n, err
}

// TestDecodeBudgetChunked: bodies sent without a Content-Length (chunked,
// as a client streaming its upload sends them) are charged to the decode
// budget as the proxy reads them. Eight held mid-body, each 200 KB in,
// against a budget of 1 MiB: some are held, the others refused at once
// with a 503 proxy_busy, Retry-After and Connection: close, and what the
// held ones are charged is never past the budget. Released, the held
// calls are served.
func TestDecodeBudgetChunked(t *testing.T) {
	up := newToolUpstream(t)
	up.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}]}`)
	})
	cfg := toolProviders(t, up).live(openStore(t, t.TempDir()))
	cfg.DecodeBudget = 1 << 20
	cfg.Logger = quiet()
	px, err := proxy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const calls = 8
	head := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"}],"pad":"`
	pad := strings.Repeat("x", 200_000)
	held := make(chan int, calls)
	release := make(chan struct{})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var id int
		fmt.Sscan(r.Header.Get("X-Call"), &id)
		if r.ContentLength != -1 {
			t.Errorf("call %d: Content-Length %d, want a chunked body", id, r.ContentLength)
		}
		body := r.Body
		r.Body = &heldBody{ReadCloser: body, id: id, want: len(head) + len(pad), held: held, release: release}
		px.ServeHTTP(w, r)
		// A refused call's answer goes out now, and what is left of
		// its body is read here, so the client never writes into a
		// closed connection.
		w.(http.Flusher).Flush()
		_, _ = io.Copy(io.Discard, body)
	}))
	t.Cleanup(srv.Close)
	writers := make([]*io.PipeWriter, calls)
	// A failed test frees the held calls and their clients before the
	// server closes (cleanups run last first).
	t.Cleanup(func() {
		free()
		for _, pw := range writers {
			if pw != nil {
				pw.CloseWithError(errors.New("test over"))
			}
		}
	})

	type answer struct {
		id   int
		resp *http.Response
		err  error
	}
	answers := make(chan answer, calls)
	for i := range calls {
		pr, pw := io.Pipe()
		writers[i] = pw
		go func() { _, _ = io.WriteString(pw, head+pad) }()
		req, err := http.NewRequest(http.MethodPost, srv.URL+proxy.RouteChatCompletions, pr)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Call", fmt.Sprint(i))
		go func() {
			resp, err := http.DefaultClient.Do(req)
			answers <- answer{i, resp, err}
		}()
	}
	// Every call is either held mid-body or answered.
	var nheld, refused int
	for range calls {
		select {
		case <-held:
			nheld++
		case a := <-answers:
			if a.err != nil {
				t.Fatalf("call %d: %v", a.id, a.err)
			}
			if a.resp.StatusCode != http.StatusServiceUnavailable || a.resp.Header.Get("Retry-After") != "1" || !a.resp.Close {
				t.Errorf("call %d answered while others are held: %d Retry-After %q close %v, want 503, Retry-After 1, Connection: close",
					a.id, a.resp.StatusCode, a.resp.Header.Get("Retry-After"), a.resp.Close)
			}
			writers[a.id].Close()
			b, _ := io.ReadAll(a.resp.Body)
			a.resp.Body.Close()
			var e struct{ Error struct{ Code string } }
			if err := json.Unmarshal(b, &e); err != nil || e.Error.Code != "proxy_busy" {
				t.Errorf("call %d: %s, want an OpenAI error proxy_busy", a.id, b)
			}
			refused++
		}
	}
	if used := px.BudgetUsed(); used > cfg.DecodeBudget {
		t.Errorf("%d calls held hold %d bytes charged, past the budget of %d", nheld, used, cfg.DecodeBudget)
	}
	if nheld == 0 || refused == 0 {
		t.Fatalf("%d held, %d refused: want the budget to hold some and refuse the others", nheld, refused)
	}
	free()
	for i := range calls {
		_, _ = io.WriteString(writers[i], `"}`)
		writers[i].Close()
	}
	for range nheld {
		a := <-answers
		if a.err != nil {
			t.Fatalf("call %d: %v", a.id, a.err)
		}
		b, _ := io.ReadAll(a.resp.Body)
		a.resp.Body.Close()
		if a.resp.StatusCode != http.StatusOK {
			t.Errorf("held call %d released: %d %s, want 200", a.id, a.resp.StatusCode, b)
		}
	}
	srv.Close()
	if used := px.BudgetUsed(); used != 0 {
		t.Errorf("every call done, %d bytes still charged", used)
	}
}
