package openai

import (
	"bytes"
	"github.com/sextant-dev/sextant/plugins/internal/llmhttp"
	"reflect"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/sdk"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 3, 10, 12, 0, 0, 400e6, time.UTC)
	for _, tc := range []struct {
		name string
		h    map[string][]string
		want time.Duration
	}{
		{"none", nil, 0},
		{"seconds", map[string][]string{"Retry-After": {"20"}}, 20 * time.Second},
		{"fractional seconds", map[string][]string{"retry-after": {"0.5"}}, 500 * time.Millisecond},
		{"milliseconds win", map[string][]string{"Retry-After": {"1"}, "Retry-After-Ms": {"250"}}, 250 * time.Millisecond},
		{"bad milliseconds fall back", map[string][]string{"Retry-After": {"1"}, "Retry-After-Ms": {"soon"}}, time.Second},
		{"http date rounded up", map[string][]string{"Retry-After": {"Mon, 10 Mar 2025 12:00:03 GMT"}}, 3 * time.Second},
		{"rfc850 date", map[string][]string{"Retry-After": {"Monday, 10-Mar-25 12:00:05 GMT"}}, 5 * time.Second},
		{"date in the past", map[string][]string{"Retry-After": {"Mon, 10 Mar 2025 11:00:00 GMT"}}, 0},
		{"negative", map[string][]string{"Retry-After": {"-3"}}, 0},
		{"huge", map[string][]string{"Retry-After": {"1e300"}}, 0},
		{"garbage", map[string][]string{"Retry-After": {"later"}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := llmhttp.RetryAfter(tc.h, now); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestTokenParamAuto(t *testing.T) {
	for base, want := range map[string]string{
		"":                              paramMaxCompletionTokens, // the default base_url
		"https://api.openai.com/v1":     paramMaxCompletionTokens,
		"https://API.OpenAI.com/v1/":    paramMaxCompletionTokens,
		"http://localhost:11434/v1":     paramMaxTokens,
		"https://litellm.internal/v1":   paramMaxTokens,
		"https://openrouter.ai/api/v1":  paramMaxTokens,
		"http://127.0.0.1:8000/v1?x=1":  paramMaxTokens,
		"https://api.openai.com.evil/x": paramMaxTokens,
	} {
		c := map[string]any{}
		if base != "" {
			c[ConfigBaseURL] = base
		}
		cfg, err := parseConfig(c)
		if err != nil {
			t.Fatalf("%q: %v", base, err)
		}
		if cfg.tokenParam != want {
			t.Errorf("%q: %s, want %s", base, cfg.tokenParam, want)
		}
	}
}

// TestDecodeStream: a whole streamed body is read as ChatStream reads
// one, by the same reader and rule; include_usage is asked for unless
// noUsage.
func TestDecodeStream(t *testing.T) {
	const (
		hi     = `data: {"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`
		length = `data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`
		usage  = `data: {"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}`
	)
	for _, tc := range []struct {
		name, body string
		noUsage    bool
		want       *sdk.ChatResponse
		wantErr    string
	}{
		{
			name: "server ignored stream",
			body: `{"model":"m","choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}`,
			want: &sdk.ChatResponse{Text: "hi", FinishReason: "stop", Model: "m", Usage: sdk.Usage{InputTokens: 1, OutputTokens: 2}},
		},
		{
			name:    "finish without [DONE], usage not asked",
			body:    hi + "\n\n" + length + "\n\n",
			noUsage: true,
			want:    &sdk.ChatResponse{Text: "hi", FinishReason: "length", Model: "m"},
		},
		{
			name:    "finish without [DONE] or the usage asked",
			body:    hi + "\n\n" + length + "\n\n",
			wantErr: "openai: stream cut short after 2 events: it ended before the usage chunk stream_options.include_usage asks for (and no data: [DONE])",
		},
		{
			name: "lone CRs, a BOM, no [DONE]",
			body: "\xef\xbb\xbf" + hi + "\r\r" + length + "\r\r" + usage + "\r\r",
			want: &sdk.ChatResponse{Text: "hi", FinishReason: "length", Model: "m", Usage: sdk.Usage{InputTokens: 1, OutputTokens: 2}},
		},
		{
			name:    "ends inside an event",
			body:    hi + "\n\n" + length + "\n\n" + usage + "\n",
			wantErr: "openai: stream cut short inside event 3",
		},
		{
			name: "refusal",
			body: "data: {\"choices\":[{\"delta\":{\"refusal\":\"I can't\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"refusal\":\" help.\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
			want: &sdk.ChatResponse{Text: "I can't help.", FinishReason: "refusal"},
		},
		{
			name:    "malformed event",
			body:    "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: {\"choices\":[\n\n",
			wantErr: "openai: malformed stream event 2: unexpected end of JSON input",
		},
		{
			name:    "quota error event",
			body:    "data: {\"error\":{\"message\":\"You exceeded your current quota\",\"type\":\"insufficient_quota\",\"code\":\"insufficient_quota\"}}\n\n",
			wantErr: "openai: stream error insufficient_quota: You exceeded your current quota",
		},
		{
			name:    "empty",
			body:    "",
			wantErr: "openai: stream cut short after 0 events: it ended before its final event (data: [DONE], or a chunk with a finish_reason)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeStream(&sdk.HTTPResponse{Status: 200, Body: []byte(tc.body)}, &chatRequest{StreamOptions: &streamOptions{IncludeUsage: !tc.noUsage}})
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("got %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, %v\nwant %+v", got, err, tc.want)
			}
		})
	}
}

func TestErrorBody(t *testing.T) {
	long := "upstream connect error or disconnect/reset before headers. reset reason: overflow " + string(bytes.Repeat([]byte("x"), 300))
	for _, tc := range []struct {
		status int
		body   string
		want   string
		code   sdk.Code
	}{
		{400, `{"error":{"code":400,"message":"the request exceeds the available context size","type":"exceed_context_size_error"}}`,
			"openai: http 400 exceed_context_size_error: the request exceeds the available context size", sdk.CodeBadRequest},
		{402, `{"error":{"message":"Insufficient credits","code":402}}`, "openai: http 402: Insufficient credits", sdk.CodeAuth},
		{500, `{"error":null}`, "openai: http 500: {\"error\":null}", sdk.CodeUnavailable},
		{500, long, "openai: http 500: " + long[:200] + "…", sdk.CodeUnavailable},
		{302, "", "openai: http 302 (empty body)", sdk.CodeUnavailable},
	} {
		err := refusalError(&sdk.HTTPResponse{Status: tc.status, Body: []byte(tc.body)})
		if err.Message != tc.want || err.Code != tc.code {
			t.Errorf("%d %s:\n got %s %q\nwant %s %q", tc.status, tc.body, err.Code, err.Message, tc.code, tc.want)
		}
	}
}
