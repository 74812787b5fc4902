//go:build !wasip1

package sdk

import (
	"bytes"
	"context"
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

var nativeClient = &http.Client{Timeout: 5 * time.Minute}

func doHTTP(req *HTTPRequest) (*HTTPResponse, error) {
	ctx := context.Background()
	if req.TimeoutMS > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMS)*time.Millisecond)
		defer cancel()
	}
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
	resp, err := nativeClient.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("http %s %s: %w", req.Method, req.URL, err)
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
