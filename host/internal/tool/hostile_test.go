package tool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/tool"
)

// goServer is an MCP server on the official Go SDK over streamable HTTP,
// answering in JSON, with one tool (echo) — wrapped by wrap, when set.
func goServer(t *testing.T, wrap func(http.Handler) http.Handler) *httptest.Server {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "go-test", Version: "1"}, nil)
	type echoArgs struct {
		Text string `json:"text"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "says it back"}, func(_ context.Context, _ *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
	})
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{JSONResponse: true})
	if wrap != nil {
		h = wrap(h)
	}
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

func httpSet(t *testing.T, url string, env map[string]string) *tool.Set {
	t.Helper()
	s := tool.NewSet(&pipeline.Pipeline{Dir: t.TempDir(), Tools: map[string]pipeline.ToolSource{"go": {URL: url,
		Headers: map[string]string{"X-Api-Key": "GO_TOOL_KEY"}, Timeout: pipeline.Duration(time.Hour)}}},
		tool.Options{Getenv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	t.Cleanup(func() { s.Close() })
	return s
}

// TestHTTPRedirectKeepsHeaders: a server that redirects its endpoint to
// another origin gets the configured headers (credentials) itself, and
// the server redirected to never sees them; the calls still work there.
func TestHTTPRedirectKeepsHeaders(t *testing.T) {
	var mu sync.Mutex
	var elsewhere []string
	other := goServer(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			elsewhere = append(elsewhere, r.Header.Get("X-Api-Key"))
			mu.Unlock()
			h.ServeHTTP(w, r)
		})
	})
	var front []string
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		front = append(front, r.Header.Get("X-Api-Key"))
		mu.Unlock()
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirect.Close)
	s := httpSet(t, redirect.URL+"/mcp", map[string]string{"GO_TOOL_KEY": "sk-tool-secret"})
	res, err := s.Call(context.Background(), "go", "echo", json.RawMessage(`{"text":"hi"}`))
	if err != nil || res.Content != "hi" {
		t.Fatalf("echo through a redirect: %+v %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(front) == 0 || len(elsewhere) == 0 {
		t.Fatalf("%d requests to the endpoint, %d to the origin it redirects to", len(front), len(elsewhere))
	}
	for _, k := range front {
		if k != "sk-tool-secret" {
			t.Errorf("the endpoint got X-Api-Key %q, want the configured one", k)
		}
	}
	for _, k := range elsewhere {
		if k != "" {
			t.Errorf("the origin the endpoint redirects to got X-Api-Key %q, want none", k)
		}
	}
}

// TestHTTPAnswerBounded: a server answering a call with a JSON body that
// does not end (here, until 256 MiB) fails the call as too large once the
// body passes the bound, and is not read further: it could not send all
// it meant to.
func TestHTTPAnswerBounded(t *testing.T) {
	const flood = 256 << 20
	sent := make(chan int, 1)
	srv := goServer(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			if !bytes.Contains(b, []byte(`"tools/call"`)) {
				r.Body = io.NopCloser(bytes.NewReader(b))
				h.ServeHTTP(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Mcp-Session-Id", r.Header.Get("Mcp-Session-Id"))
			n, _ := w.Write([]byte(`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"`))
			chunk := bytes.Repeat([]byte("x"), 64<<10)
			for n < flood {
				m, err := w.Write(chunk)
				n += m
				if err != nil {
					break
				}
			}
			sent <- n
		})
	})
	s := httpSet(t, srv.URL, map[string]string{"GO_TOOL_KEY": "k"})
	_, err := s.Call(context.Background(), "go", "echo", json.RawMessage(`{"text":"hi"}`))
	if err == nil || !strings.Contains(err.Error(), "the server's answer is larger than 16777216 bytes") {
		t.Errorf("err = %v, want the answer refused as larger than 16 MiB", err)
	}
	// The client hung up, so the server's write failed: or it read all.
	if n := <-sent; n >= flood {
		t.Fatalf("the server sent all %d bytes: the client read them all", n)
	}
}
