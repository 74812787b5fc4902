package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/sdk"
)

// client is how sextant introduces itself to MCP servers.
var client = &mcp.Implementation{Name: "sextant", Version: "1"}

// mcpSource is an MCP server session.
type mcpSource struct {
	session *mcp.ClientSession
	stderr  *tail // a stdio server's last words, for errors
}

var _ Source = (*mcpSource)(nil)

// baseEnv are the variables a stdio server gets from sextant's environment
// without asking: enough to find and run a program, nothing secret.
var baseEnv = []string{"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "SYSTEMROOT"}

func lookupEnv(k string) (string, bool) { return os.LookupEnv(k) }

// dialStdio starts a stdio MCP server and initializes a session with it.
func dialStdio(ctx context.Context, name string, cfg pipeline.ToolSource, pipelineDir string, getenv func(string) (string, bool), logger *slog.Logger) (*mcpSource, error) {
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Dir = pipelineDir
	if cfg.Dir != "" {
		cmd.Dir = cfg.Dir
		if !filepath.IsAbs(cfg.Dir) {
			cmd.Dir = filepath.Join(pipelineDir, cfg.Dir)
		}
	}
	env := []string{}
	for _, k := range baseEnv {
		if v, ok := getenv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for _, e := range cfg.Env {
		if strings.Contains(e, "=") {
			env = append(env, e)
		} else if v, ok := getenv(e); ok {
			env = append(env, e+"="+v)
		} else {
			return nil, fmt.Errorf("env: environment variable %s is not set", e)
		}
	}
	cmd.Env = env
	st := &tail{logger: logger.With("tool_source", name)}
	cmd.Stderr = st
	sess, err := mcp.NewClient(client, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil)
	if err != nil {
		if cmd.Process != nil {
			cmd.Process.Kill()
		}
		return nil, st.wrap(fmt.Errorf("%s: %w", cfg.Command, err))
	}
	return &mcpSource{session: sess, stderr: st}, nil
}

// dialHTTP connects to a streamable HTTP MCP server.
func dialHTTP(ctx context.Context, cfg pipeline.ToolSource, getenv func(string) (string, bool)) (*mcpSource, error) {
	hdr := http.Header{}
	for _, h := range sortedKeys(cfg.Headers) {
		v, ok := getenv(cfg.Headers[h])
		if !ok || v == "" {
			return nil, fmt.Errorf("headers.%s: environment variable %s is not set", h, cfg.Headers[h])
		}
		hdr.Set(h, v)
	}
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("url: %w", err)
	}
	hc := &http.Client{Transport: serverTransport{scheme: u.Scheme, host: u.Host, hdr: hdr, next: http.DefaultTransport}}
	t := &mcp.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}
	sess, err := mcp.NewClient(client, nil).Connect(ctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.URL, err)
	}
	return &mcpSource{session: sess}, nil
}

// maxAnswer bounds the body of one JSON answer of an HTTP server, as the
// SDK bounds an SSE event and a stdio server's line: one answer of a
// hostile or broken server cannot fill memory before max_result is
// checked.
const maxAnswer = mcp.DefaultMaxEventSize

// serverTransport is the HTTP transport of one MCP server.
type serverTransport struct {
	scheme, host string // the endpoint's origin
	hdr          http.Header
	next         http.RoundTripper
}

// RoundTrip adds the configured headers to a request to the endpoint's
// own origin only: a redirect elsewhere must not carry the server's
// credentials. A JSON answer reads as an error past maxAnswer bytes.
func (t serverTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.hdr) > 0 && r.URL.Scheme == t.scheme && r.URL.Host == t.host {
		r = r.Clone(r.Context())
		for k, v := range t.hdr {
			r.Header[k] = v
		}
	}
	resp, err := t.next.RoundTrip(r)
	if err == nil && !strings.HasPrefix(strings.ToLower(resp.Header.Get("Content-Type")), "text/event-stream") {
		resp.Body = &boundedBody{rc: resp.Body, left: maxAnswer}
	}
	return resp, err
}

// boundedBody fails a read past its bound.
type boundedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of just the bound from a longer one.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, fmt.Errorf("%w: the server's answer is larger than %d bytes", ErrTooLarge, maxAnswer)
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

func (s *mcpSource) List(ctx context.Context) ([]sdk.ToolSpec, error) {
	var out []sdk.ToolSpec
	mark := s.stderr.mark()
	for t, err := range s.session.Tools(ctx, nil) {
		if err != nil {
			return nil, s.stderr.wrapSince(err, mark)
		}
		spec := sdk.ToolSpec{Name: t.Name, Description: t.Description}
		if t.InputSchema != nil {
			b, err := json.Marshal(t.InputSchema)
			if err != nil {
				return nil, fmt.Errorf("tool %q: input schema: %w", t.Name, err)
			}
			spec.InputSchema = b
		}
		if a := t.Annotations; a != nil {
			ro, id := a.ReadOnlyHint, a.IdempotentHint
			spec.Annotations = &sdk.ToolAnnotations{ReadOnly: &ro, Idempotent: &id, Destructive: a.DestructiveHint}
		}
		out = append(out, spec)
	}
	return out, nil
}

func (s *mcpSource) Call(ctx context.Context, name string, args json.RawMessage) (*sdk.ToolResult, error) {
	var a map[string]any
	if len(bytes.TrimSpace(args)) > 0 {
		if err := json.Unmarshal(args, &a); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadArguments, err)
		}
	}
	mark := s.stderr.mark()
	res, err := s.session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: a})
	if err != nil {
		return nil, s.stderr.wrapSince(err, mark)
	}
	out := &sdk.ToolResult{IsError: res.IsError}
	var text []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			text = append(text, c.Text)
		default:
			// Images, audio and resources reach the model as their JSON
			// form: it sees what came back even when it cannot view it.
			b, err := json.Marshal(c)
			if err != nil {
				return nil, fmt.Errorf("result content: %w", err)
			}
			text = append(text, string(b))
		}
	}
	out.Content = strings.Join(text, "\n")
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, fmt.Errorf("structured result: %w", err)
		}
		out.Structured = b
	}
	return out, nil
}

func (s *mcpSource) Close() error {
	err := s.session.Close()
	// A server that exits on stdin's close reports its exit; that is the
	// goodbye, not a failure.
	var ee *exec.ExitError
	if errors.As(err, &ee) || errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// tail keeps the last bytes a stdio server wrote to stderr, for errors,
// and logs each line it writes.
type tail struct {
	logger  *slog.Logger
	mu      sync.Mutex
	last    []byte // the last tailMax bytes
	pending []byte // a line not yet ended
	total   int64  // bytes written since the server started
}

const tailMax = 2048

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total += int64(len(p))
	t.last = append(t.last, p...)
	if len(t.last) > tailMax {
		t.last = append([]byte(nil), t.last[len(t.last)-tailMax:]...)
	}
	t.pending = append(t.pending, p...)
	for {
		i := bytes.IndexByte(t.pending, '\n')
		if i < 0 {
			break
		}
		t.logger.Debug("tool server stderr", "line", string(t.pending[:i]))
		t.pending = t.pending[i+1:]
	}
	if len(t.pending) > tailMax {
		t.pending = t.pending[:0]
	}
	return len(p), nil
}

// wrap adds the server's last stderr output to err, when there is any:
// for a server that failed to start, all it said may explain why.
func (t *tail) wrap(err error) error { return t.wrapSince(err, 0) }

// mark is how much the server has written to stderr so far, for
// wrapSince.
func (t *tail) mark() int64 {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total
}

// wrapSince adds to err what the server wrote to stderr after mark, when
// there is any. A call's error gets only what the server said during the
// call: its startup banner or an earlier call's complaint does not explain
// a timeout, and shown beside one it reads as if it did.
func (t *tail) wrapSince(err error, mark int64) error {
	if t == nil || err == nil {
		return err
	}
	t.mu.Lock()
	b := t.last
	if n := t.total - mark; n < int64(len(b)) {
		b = b[int64(len(b))-n:]
	}
	s := strings.TrimSpace(string(b))
	t.mu.Unlock()
	if s == "" {
		return err
	}
	return fmt.Errorf("%w (server stderr: %s)", err, clip(s, 500))
}
