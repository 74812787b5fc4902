package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sextant-dev/sextant/host/internal/evolve"
	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// InfoFile is the file in the store directory where a server says where
// it listens, for as long as it holds the store: CLI commands that find
// the store in use go through the API instead.
const InfoFile = "sextant.serve"

// Info is the content of InfoFile.
type Info struct {
	URL string `json:"url"`
	PID int    `json:"pid"`
}

// WriteInfo writes InfoFile into the store directory dir; the returned
// func removes it.
func WriteInfo(dir string, info Info) (func(), error) {
	b, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, InfoFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return func() { os.Remove(path) }, nil
}

// Discover returns a client of the server that holds the store at dir,
// given the pid of the store's holder (from its store.LockedError): the
// info file must name the same process, so a stale file left by a killed
// server is never trusted. ok is false when no server holds the store.
func Discover(dir string, holder int) (c *Client, ok bool) {
	b, err := os.ReadFile(filepath.Join(dir, InfoFile))
	if err != nil {
		return nil, false
	}
	var info Info
	if json.Unmarshal(b, &info) != nil || info.URL == "" || info.PID != holder {
		return nil, false
	}
	u, err := url.Parse(info.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, false
	}
	return NewClient(info.URL, os.Getenv(TokenEnv)), true
}

// Client calls a sextant server's API.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// NewClient returns a client of the server at base (http://host:port).
func NewClient(base, token string) *Client {
	store.RegisterSecret(token) // never stored or logged by this process
	return &Client{base: strings.TrimRight(base, "/"), token: token, http: &http.Client{Timeout: 10 * time.Minute}}
}

// URL is the server's base URL.
func (c *Client) URL() string { return c.base }

// APIError is an error answer of the server.
type APIError struct {
	Status int
	Err    Error
}

func (e *APIError) Error() string { return e.Err.Message }

// HTTPStatus is the answer's status code, for callers that classify
// errors without importing this package.
func (e *APIError) HTTPStatus() int { return e.Status }

// Is lets callers test an answer as the store's errors: 404 is
// store.ErrNotFound, 400 store.ErrInvalid, 409 store.ErrExists.
func (e *APIError) Is(target error) bool {
	switch e.Status {
	case http.StatusNotFound:
		return target == store.ErrNotFound
	case http.StatusBadRequest:
		return target == store.ErrInvalid
	case http.StatusConflict:
		return target == store.ErrExists
	}
	return false
}

func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	if body == nil {
		return c.send(ctx, method, path, "", nil, out)
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	return c.send(ctx, method, path, "application/json", bytes.NewReader(b), out)
}

// send sends body (of media type ctype; none when nil) and decodes the
// answer into out.
func (c *Client) send(ctx context.Context, method, path, ctype string, body io.Reader, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", ctype)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("sextant serve at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return fmt.Errorf("sextant serve at %s: %w", c.base, err)
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Error Error `json:"error"`
		}
		if json.Unmarshal(b, &e) != nil || e.Error.Message == "" {
			e.Error.Message = strconv.Itoa(resp.StatusCode) + " " + strings.TrimSpace(string(b))
		}
		return &APIError{Status: resp.StatusCode, Err: e.Error}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("sextant serve at %s: %s %s: %w", c.base, method, path, err)
	}
	return nil
}

// AddReward adds a reward to a task (POST /api/v1/tasks/{id}/rewards).
func (c *Client) AddReward(ctx context.Context, r *store.Reward) (*store.Reward, error) {
	rs, err := c.AddRewards(ctx, []*store.Reward{r})
	if err != nil {
		return nil, err
	}
	return rs[0], nil
}

// AddRewards adds rewards to one task, on distinct dimensions, in one
// request (POST /api/v1/tasks/{id}/rewards): all of them or none. They
// must share the task, span, execution, tags and note of the first.
func (c *Client) AddRewards(ctx context.Context, rs []*store.Reward) ([]*store.Reward, error) {
	if len(rs) == 0 {
		return nil, nil
	}
	r := rs[0]
	req := RewardRequest{SpanID: r.SpanID, Execution: r.Execution, Tags: r.Tags, Note: r.Note}
	for _, x := range rs {
		if x.Dimension == "" {
			v := x.Value
			req.Value = &v
			continue
		}
		if req.Dimensions == nil {
			req.Dimensions = map[string]float64{}
		}
		req.Dimensions[x.Dimension] = x.Value
	}
	path := "/api/v1/tasks/" + url.PathEscape(r.Task) + "/rewards"
	if req.Dimensions == nil {
		var out store.Reward
		if err := c.do(ctx, http.MethodPost, path, req, &out); err != nil {
			return nil, err
		}
		return []*store.Reward{&out}, nil
	}
	var out RewardsResponse
	if err := c.do(ctx, http.MethodPost, path, req, &out); err != nil {
		return nil, err
	}
	return out.Rewards, nil
}

// Run starts a run of one of the server's pipelines and waits for it
// (POST /api/v1/runs).
func (c *Client) Run(ctx context.Context, req RunRequest) (*run.Result, error) {
	var out run.Result
	if err := c.do(ctx, http.MethodPost, "/api/v1/runs", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Resume continues a task (POST /api/v1/tasks/{id}/resume).
func (c *Client) Resume(ctx context.Context, task string, answers map[string]any) (*run.Result, error) {
	var out run.Result
	if err := c.do(ctx, http.MethodPost, "/api/v1/tasks/"+url.PathEscape(task)+"/resume", ResumeRequest{Answers: answers}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Send delivers a message to a task (POST /api/v1/tasks/{id}/messages).
// key, when not "", is the correlation key the task's subscription must have.
func (c *Client) Send(ctx context.Context, task, name, key string, vars map[string]any) (*run.Result, error) {
	var out run.Result
	if err := c.do(ctx, http.MethodPost, "/api/v1/tasks/"+url.PathEscape(task)+"/messages", MessageRequest{Name: name, Key: key, Vars: vars}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Signal broadcasts a signal (POST /api/v1/signals).
func (c *Client) Signal(ctx context.Context, name, pipeline string, vars map[string]any) (*SignalResult, error) {
	var out SignalResult
	if err := c.do(ctx, http.MethodPost, "/api/v1/signals", SignalRequest{Name: name, Pipeline: pipeline, Vars: vars}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SaveComparison stores a judged replay (POST /api/v1/comparisons).
func (c *Client) SaveComparison(ctx context.Context, v *evolve.Verdict) error {
	return c.do(ctx, http.MethodPost, "/api/v1/comparisons", v, nil)
}

// Import reads a JSONL export into the server's store, all or nothing
// (POST /api/v1/import); name is the file errors are positioned in.
func (c *Client) Import(ctx context.Context, name string, jsonl io.Reader) (*Imported, error) {
	var out Imported
	if err := c.send(ctx, http.MethodPost, "/api/v1/import?name="+url.QueryEscape(name), ImportType, jsonl, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Decide approves (promoting the candidate beside the server's pipeline)
// or rejects a review request (POST /api/v1/reviews/{id}/approve|reject).
func (c *Client) Decide(ctx context.Context, id string, approve bool, d Decision) (*evolve.ReviewRequest, error) {
	verb := "reject"
	if approve {
		verb = "approve"
	}
	var out evolve.ReviewRequest
	if err := c.do(ctx, http.MethodPost, "/api/v1/reviews/"+url.PathEscape(id)+"/"+verb, d, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ViaServer returns the client of the server that holds the store at dir
// when err (from opening it) says it is in use by a process that wrote
// InfoFile; otherwise it returns err unchanged.
func ViaServer(dir string, err error) (*Client, error) {
	var le *store.LockedError
	if !errors.As(err, &le) {
		return nil, err
	}
	c, ok := Discover(dir, le.PID)
	if !ok {
		return nil, err
	}
	return c, nil
}
