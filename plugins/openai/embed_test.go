package openai_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/plugins/openai"
	"github.com/sextant-dev/sextant/plugins/openai/openaitest"
	"github.com/sextant-dev/sextant/sdk"
)

// TestEmbed: vectors come back per input, placed by the server's index
// (the upstream lists them in reverse), with usage; the request is what
// /v1/embeddings takes, with the bearer token.
func TestEmbed(t *testing.T) {
	var got *http.Request
	up := &openaitest.Upstream{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Clone(context.Background())
		up.ServeHTTP(w, r)
	}))
	defer srv.Close()
	in := []string{"archive the newsletter", "reply to the meeting invite"}
	resp, err := openai.New().Embed(context.Background(), &sdk.EmbedRequest{Model: "text-embedding-3-small", Input: in,
		Config: map[string]any{"base_url": srv.URL + "/v1", "api_key": openaitest.TestKey}})
	if err != nil {
		t.Fatal(err)
	}
	if got.URL.Path != "/v1/embeddings" || got.Header.Get("Authorization") != "Bearer "+openaitest.TestKey {
		t.Errorf("request %s with Authorization %q", got.URL.Path, got.Header.Get("Authorization"))
	}
	if len(resp.Vectors) != 2 || resp.Model != "text-embedding-3-small" || resp.Usage.InputTokens != 8 {
		t.Fatalf("got %d vectors, model %q, usage %+v", len(resp.Vectors), resp.Model, resp.Usage)
	}
	for i, text := range in {
		want, _ := openaitest.BagOfWords(text)
		for d := range want {
			if math.Abs(resp.Vectors[i][d]-want[d]) > 1e-12 {
				t.Fatalf("vector %d differs from its text's at dimension %d", i, d)
			}
		}
	}
}

// TestEmbedErrors: refusals and malformed answers are typed errors that
// never hold the key.
func TestEmbedErrors(t *testing.T) {
	cases := []struct {
		name, body string
		status     int
		in         []string
		code       sdk.Code
		msg        string
	}{
		{"unauthorized", `{"error":{"message":"Incorrect API key provided: ` + openaitest.TestKey + `","type":"invalid_request_error","code":"invalid_api_key"}}`, 401,
			[]string{"a"}, sdk.CodeAuth, "openai: http 401 invalid_api_key: Incorrect API key provided: [redacted]"},
		{"missing-vector", `{"data":[{"index":0,"embedding":[1,0]}],"model":"m"}`, 200,
			[]string{"a", "b"}, sdk.CodeUnavailable, "no embedding for input 1"},
		{"index-out-of-range", `{"data":[{"index":3,"embedding":[1,0]}],"model":"m"}`, 200,
			[]string{"a"}, sdk.CodeUnavailable, "embedding index 3 for 1 inputs"},
		{"not-json", `<html>`, 200, []string{"a"}, sdk.CodeUnavailable, "malformed response"},
		{"no-input", `{}`, 200, nil, sdk.CodeBadRequest, "openai: embeddings: no input"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(c.status)
				w.Write([]byte(c.body))
			}))
			defer srv.Close()
			_, err := openai.New().Embed(context.Background(), &sdk.EmbedRequest{Model: "m", Input: c.in,
				Config: map[string]any{"base_url": srv.URL, "api_key": openaitest.TestKey}})
			var e *sdk.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is not an *sdk.Error", err)
			}
			if e.Code != c.code || !strings.Contains(e.Message, c.msg) || strings.Contains(e.Message, openaitest.TestKey) {
				t.Errorf("got %s: %q, want %s containing %q", e.Code, e.Message, c.code, c.msg)
			}
		})
	}
}
