package openai_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/plugins/openai"
	"github.com/sextant-dev/sextant/plugins/providertest"
	"github.com/sextant-dev/sextant/sdk"
)

// The events of a streamed answer "Hello" (one choice, the usage chunk
// include_usage asks for), as data, without [DONE].
var (
	evRole   = `{"id":"c1","object":"chat.completion.chunk","model":"m-1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`
	evHel    = `{"id":"c1","object":"chat.completion.chunk","model":"m-1","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}`
	evLo     = `{"id":"c1","object":"chat.completion.chunk","model":"m-1","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}]}`
	evStop   = `{"id":"c1","object":"chat.completion.chunk","model":"m-1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
	evUsage  = `{"id":"c1","object":"chat.completion.chunk","model":"m-1","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`
	evHello  = []string{evRole, evHel, evLo, evStop, evUsage}
	wantHelo = &sdk.ChatResponse{Text: "Hello", Usage: sdk.Usage{InputTokens: 5, OutputTokens: 2}, FinishReason: "stop", Model: "m-1", ID: "c1"}
)

// frame writes events as data lines, each line ended by eol.
func frame(eol string, events ...string) string {
	var b strings.Builder
	for _, e := range events {
		b.WriteString("data: " + e + eol + eol)
	}
	return b.String()
}

// both calls the provider at url through ChatStream and through Chat
// with stream = true (the whole body read by the same reader), and
// checks the two agree.
func both(t *testing.T, url string) (*sdk.ChatResponse, error) {
	t.Helper()
	p := openai.New()
	req := func(stream bool) *sdk.ChatRequest {
		return &sdk.ChatRequest{Model: "m", Messages: []sdk.Message{{Role: "user", Content: "hi"}},
			Config: map[string]any{"base_url": url, "api_key": "sk-test", "stream": stream}}
	}
	var deltas []string
	streamed, serr := p.ChatStream(context.Background(), req(false), func(d string) error { deltas = append(deltas, d); return nil })
	whole, werr := p.Chat(context.Background(), req(true))
	if !reflect.DeepEqual(streamed, whole) || (serr == nil) != (werr == nil) || (serr != nil && serr.Error() != werr.Error()) {
		t.Fatalf("ChatStream %+v, %v; Chat %+v, %v: want the same", streamed, serr, whole, werr)
	}
	if serr == nil && strings.Join(deltas, "") != streamed.Text {
		t.Fatalf("deltas %q, answer %q", deltas, streamed.Text)
	}
	return streamed, serr
}

// TestStreamFraming: every framing the SSE spec allows, written a byte
// at a time by a real server, reads as the same answer through
// ChatStream and Chat alike: lines ended by LF, CRLF, a lone CR or a mix,
// a byte order mark, id, retry and comment lines, data split over lines,
// and no [DONE] once the stream is complete (as vLLM, llama.cpp's server
// and Ollama may end theirs).
func TestStreamFraming(t *testing.T) {
	for _, f := range []struct{ name, body string }{
		{"lf", frame("\n", evHello...) + "data: [DONE]\n\n"},
		{"crlf", frame("\r\n", evHello...) + "data: [DONE]\r\n\r\n"},
		{"cr", frame("\r", evHello...) + "data: [DONE]\r\r"},
		{"lf no done", frame("\n", evHello...)},
		{"crlf no done", frame("\r\n", evHello...)},
		{"cr no done", frame("\r", evHello...)},
		{"mixed", "data: " + evRole + "\r\n\r" + "data: " + evHel + "\n\r\n" + "data: " + evLo + "\r\r\n" + frame("\r", evStop, evUsage)},
		{"bom", "\xef\xbb\xbf" + frame("\n", evHello[1:]...) + "data: [DONE]\n\n"},
		{"bom cr no done", "\xef\xbb\xbf" + frame("\r", evHello[1:]...)},
		{"fields", "retry: 3000\n\n: ping\n\nid: 1\nevent: message\n" + frame("\n", evHello[0]) + "id\r\n" + frame("\r\n", evHello[1:]...) + ": bye\n\n"},
		{"multiline data", "data: " + strings.Replace(evHel, `,"model"`, "\rdata: ,\"model\"", 1) + "\r\r" +
			"data: " + strings.Replace(evLo, `,"choices"`, "\ndata:,\"choices\"", 1) + "\n\n" + frame("\r\n", evStop, evUsage)},
	} {
		t.Run(f.name, func(t *testing.T) {
			got, err := both(t, providertest.Trickle(t, "text/event-stream", f.body))
			if err != nil || !reflect.DeepEqual(got, wantHelo) {
				t.Fatalf("answer %+v, %v; want %+v", got, err, wantHelo)
			}
		})
	}
}

// TestStreamIncomplete: a stream without [DONE] that is not complete,
// however it is framed, is an error naming what it lacks, never a
// shorter answer, through ChatStream and Chat alike.
func TestStreamIncomplete(t *testing.T) {
	for _, c := range []struct{ name, body, msg string }{
		{"no finish", frame("\r", evRole, evHel, evLo), "stream cut short after 3 events: it ended before its final event (data: [DONE], or a chunk with a finish_reason)"},
		{"no usage", frame("\r", evRole, evHel, evLo, evStop), "stream cut short after 4 events: it ended before the usage chunk stream_options.include_usage asks for (and no data: [DONE])"},
		{"a choice unfinished", frame("\r\n", evRole, evHel, strings.Replace(evLo, `"index":0`, `"index":1`, 1), evStop, evUsage),
			"stream cut short after 5 events: it ended before a finish_reason for each of its choices (1 of 2 finished, and no data: [DONE])"},
		{"inside an event", frame("\r", evHello...)[:len(frame("\r", evHello...))-1], "stream cut short inside event 5"},
		{"inside [DONE]", frame("\n", evHello...) + "data: [DONE]\n", "stream cut short inside event 6"},
		{"inside a line", frame("\r", evRole, evHel) + "data: {\"id\":\"c1\",", "stream cut short inside event 3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := both(t, providertest.Trickle(t, "text/event-stream", c.body))
			var se *sdk.Error
			if !errors.As(err, &se) || se.Code != sdk.CodeUnavailable || se.Message != "openai: "+c.msg || got != nil {
				t.Fatalf("answer %+v, %v; want unavailable %q", got, err, c.msg)
			}
		})
	}
}
