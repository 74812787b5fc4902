//go:build !wasip1

package sdk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"
)

func logHost(level int32, msg string) {
	slog.Log(context.Background(), slog.Level(level), msg)
}

var nativeClient = &http.Client{Timeout: 5 * time.Minute, CheckRedirect: keepCredentials}

// credentialOrigin marks the context of a request that carries a bound
// credential with the scheme and host it was sent to.
type credentialOrigin struct{}

// keepCredentials refuses to follow a request that carries a bound
// credential to another origin, as the wasm host's http function does:
// net/http passes a custom header (x-api-key) and, to another port of the
// same host, even Authorization on to wherever a redirect points.
func keepCredentials(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if origin, ok := req.Context().Value(credentialOrigin{}).(string); ok && req.URL.Scheme+"://"+req.URL.Host != origin {
		return fmt.Errorf("redirect from %s to %s://%s refused: the request carries a bound credential", origin, req.URL.Scheme, req.URL.Host)
	}
	return nil
}

func doHTTP(req *HTTPRequest) (*HTTPResponse, error) {
	ctx := context.Background()
	if req.TimeoutMS > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMS)*time.Millisecond)
		defer cancel()
	}
	resp, err := sendNative(ctx, req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxHTTPBody+1))
	if err != nil {
		return nil, fmt.Errorf("http %s %s: read body: %w", req.Method, req.URL, err)
	}
	if len(body) > MaxHTTPBody {
		return nil, fmt.Errorf("http %s %s: response body over %d bytes", req.Method, req.URL, MaxHTTPBody)
	}
	return &HTTPResponse{Status: resp.StatusCode, Header: resp.Header, Body: body}, nil
}

// sendNative sends req with net/http, filling in its credentials from the
// environment, and returns the response with its body unread.
func sendNative(ctx context.Context, req *HTTPRequest) (*http.Response, error) {
	hr, err := http.NewRequestWithContext(ctx, req.Method, req.URL, bytes.NewReader(req.Body))
	if err != nil {
		return nil, fmt.Errorf("http %s %s: %w", req.Method, req.URL, err)
	}
	for k, vs := range req.Header {
		for _, v := range vs {
			hr.Header.Add(k, v)
		}
	}
	for _, c := range req.Credentials {
		secret := os.Getenv(c.Name)
		if c.Name == "" || secret == "" {
			return nil, fmt.Errorf("http %s %s: credential %q is not bound to this plugin", req.Method, req.URL, c.Name)
		}
		hr.Header.Set(c.Header, c.Prefix+secret)
	}
	if len(req.Credentials) > 0 {
		hr = hr.WithContext(context.WithValue(hr.Context(), credentialOrigin{}, hr.URL.Scheme+"://"+hr.URL.Host))
	}
	resp, err := nativeClient.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("http %s %s: %w", req.Method, req.URL, err)
	}
	return resp, nil
}

// HTTPStream sends req natively and returns the answer with its body
// unread, for a caller that reads it as it arrives (a streamed LLM
// answer). ctx (and req.TimeoutMS, when set) bound the whole exchange,
// body included; closing Body releases it. The body is bounded by
// MaxHTTPBody: reading past it fails. Credentials are filled in as HTTP
// does natively.
//
// HTTPStream exists only outside WebAssembly (a builtin or a process
// plugin); in a wasm plugin it fails, as the host's http function returns
// whole bodies.
func HTTPStream(ctx context.Context, req *HTTPRequest) (*HTTPStreamResponse, error) {
	cancel := func() {}
	if req.TimeoutMS > 0 {
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMS)*time.Millisecond)
	}
	resp, err := sendNative(ctx, req)
	if err != nil {
		cancel()
		return nil, err
	}
	body := &limitedBody{r: resp.Body, left: MaxHTTPBody, cancel: cancel, where: "http " + req.Method + " " + req.URL}
	return &HTTPStreamResponse{Status: resp.StatusCode, Header: resp.Header, Body: body}, nil
}

// limitedBody is a streamed body that fails past its limit and releases
// its request's context when closed.
type limitedBody struct {
	r      io.ReadCloser
	left   int64
	cancel context.CancelFunc
	where  string
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		if n, err := b.r.Read(one[:]); n == 0 && err != nil {
			return 0, err // the body ended exactly at the limit
		}
		return 0, fmt.Errorf("%s: response body over %d bytes", b.where, MaxHTTPBody)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error {
	err := b.r.Close()
	b.cancel()
	return err
}
