package anthropic_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/plugins/providertest"
	"github.com/sextant-dev/sextant/sdk"
)

// TestStreamFraming: a Messages stream framed any way the SSE spec
// allows, written a byte at a time by a real server, reads as the same
// answer: lines ended by LF, CRLF, a lone CR or a mix, a byte order
// mark, id, retry and comment lines, data split over lines.
func TestStreamFraming(t *testing.T) {
	body := msgStart + textDelta("Hel") + textDelta("lo") + msgEnd
	eol := func(e string) string { return strings.ReplaceAll(body, "\n", e) }
	// The first event without its name (its data says its type): a BOM
	// before it must not hide its data line.
	bare := strings.TrimPrefix(body, "event: message_start\n")
	split := strings.Replace(body, `"type":"message_start",`, "\"type\":\"message_start\",\ndata: ", 1)
	for _, f := range []struct{ name, body string }{
		{"lf", body},
		{"crlf", eol("\r\n")},
		{"cr", eol("\r")},
		{"mixed", strings.Replace(strings.Replace(eol("\r"), "\r\r", "\r\n\r", 2), "\r\r", "\n\r\n", 2)},
		{"bom", "\xef\xbb\xbf" + bare},
		{"bom cr", "\xef\xbb\xbf" + strings.ReplaceAll(bare, "\n", "\r")},
		{"fields", "retry: 1000\r\n\r\n: ping\r\rid: 9\n" + strings.ReplaceAll(body, "event: ", "id: 1\r: note\revent: ")},
		{"multiline data", strings.ReplaceAll(split, "\n", "\r")},
	} {
		t.Run(f.name, func(t *testing.T) {
			deltas, resp, err := streamCall(t, providertest.Trickle(t, "text/event-stream", f.body), false)
			want := &sdk.ChatResponse{ID: "msg_1", Model: "claude-x", Text: "Hello", FinishReason: "stop", Usage: sdk.Usage{InputTokens: 6, OutputTokens: 3}}
			if err != nil || !reflect.DeepEqual(deltas, []string{"Hel", "lo"}) || !reflect.DeepEqual(resp, want) {
				t.Fatalf("deltas %q answer %+v, %v; want Hel lo and %+v", deltas, resp, err, want)
			}
		})
	}
}

// TestStreamIncomplete: a Messages stream that ends before message_stop,
// or inside an event, is an error, never a shorter answer.
func TestStreamIncomplete(t *testing.T) {
	cr := strings.ReplaceAll(msgStart+textDelta("Hel")+msgEnd, "\n", "\r")
	for _, c := range []struct{ name, body, msg string }{
		{"no message_stop", strings.ReplaceAll(msgStart+textDelta("Hel"), "\n", "\r"), "anthropic: stream cut short after 4 events (no message_stop)"},
		{"inside message_stop", cr[:len(cr)-1], "anthropic: stream cut short inside event 7"},
		{"inside a line", cr[:len(cr)-5], "anthropic: stream cut short inside event 7"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, resp, err := streamCall(t, providertest.Trickle(t, "text/event-stream", c.body), false)
			var se *sdk.Error
			if !errors.As(err, &se) || se.Code != sdk.CodeUnavailable || se.Message != c.msg || resp != nil {
				t.Fatalf("answer %+v, %v; want unavailable %q", resp, err, c.msg)
			}
		})
	}
}
