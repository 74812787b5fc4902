package proxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// framings are event streams as conformant servers frame them, each
// with the data its events carry, in order (a browser's view).
var framings = []struct {
	name, stream string
	data         []string
}{
	{"lf", "data: a\n\ndata: b\n\n", []string{"a", "b"}},
	{"crlf", "data: a\r\n\r\ndata: b\r\n\r\n", []string{"a", "b"}},
	{"cr", "data: a\r\rdata: b\r\r", []string{"a", "b"}},
	{"mixed", "data: a\r\n\rdata: b\n\r\ndata: c\r\r\n", []string{"a", "b", "c"}},
	{"bom", "\xef\xbb\xbfdata: a\n\ndata: b\n\n", []string{"a", "b"}},
	{"bom-cr", "\xef\xbb\xbfdata: a\r\r", []string{"a"}},
	{"fields", "retry: 3000\n\nid: 7\nevent: x\ndata: a\n: note\n\n: ping\n\nid\ndata:b\n\n", []string{"a", "b"}},
	{"multiline", "data: {\"a\":\rdata: 1}\r\rdata: x\ndata\ndata: y\n\n", []string{"{\"a\":\n1}", "x\n\ny"}},
	{"trailing", "data: a\n\n: bye\n\n\n", []string{"a"}},
}

// readAll reads r's events: the bytes of each, what followed the last,
// and the data of those holding some.
func readAll(r io.Reader) (raws []string, trailing string, data []string, err error) {
	sr := newSSEReader(r)
	for {
		raw, err := sr.next()
		if err == io.EOF {
			return raws, string(raw), data, nil
		}
		if err != nil {
			return raws, "", data, err
		}
		raws = append(raws, string(raw))
		if ev := sr.event(raw); ev.data != nil {
			data = append(data, string(ev.data))
		}
	}
}

// TestSSEReaderSplits: every framing the SSE spec allows (CRLF, LF, lone
// CR, mixed; a BOM; id, retry and comment lines; multi-line data) reads
// as the same events whether the stream arrives whole, a byte at a time
// or split in two at any offset, and the events' bytes and what follows
// them are the stream, byte for byte.
func TestSSEReaderSplits(t *testing.T) {
	for _, f := range framings {
		t.Run(f.name, func(t *testing.T) {
			check := func(how string, r io.Reader) {
				t.Helper()
				raws, trailing, data, err := readAll(r)
				if err != nil {
					t.Fatalf("%s: %v", how, err)
				}
				if got := strings.Join(raws, "") + trailing; got != f.stream {
					t.Fatalf("%s: bytes %q, want %q", how, got, f.stream)
				}
				if !slices.Equal(data, f.data) {
					t.Fatalf("%s: data %q, want %q", how, data, f.data)
				}
			}
			check("whole", strings.NewReader(f.stream))
			check("byte by byte", iotest.OneByteReader(strings.NewReader(f.stream)))
			for k := 1; k < len(f.stream); k++ {
				check(fmt.Sprintf("split at %d", k), io.MultiReader(
					iotest.HalfReader(strings.NewReader(f.stream[:k])), strings.NewReader(f.stream[k:])))
			}
		})
	}
}

// heldReader gives its bytes, then fails: a reader after them is one that
// would wait for an upstream holding its next event back.
type heldReader struct{ r io.Reader }

var errHeld = errors.New("read past what the upstream has sent")

func (h heldReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if err == io.EOF {
		return n, errHeld
	}
	return n, err
}

// TestSSEReaderDoesNotWait: an event is returned as soon as its blank
// line is in, without reading further — with lone-CR endings too, where
// a LF could still follow the last CR: a stream whose previous line
// ended in a lone CR is not waiting for one. With CRLF endings the
// reader waits for the LF, which a CRLF server sends with its CR.
func TestSSEReaderDoesNotWait(t *testing.T) {
	for _, ev := range []string{"data: a\n\n", "data: a\r\n\r\n", "data: a\r\r", "event: e\rdata: a\r\r", "\xef\xbb\xbfdata: a\r\r"} {
		sr := newSSEReader(heldReader{strings.NewReader(ev)})
		raw, err := sr.next()
		if err != nil || string(raw) != ev || string(sr.event(raw).data) != "a" {
			t.Errorf("%q: read %q, %v; want the event without reading on", ev, raw, err)
		}
	}
}

// TestSSEReaderCut: a stream that stops inside an event (in a line, or
// after a field line with no blank line) is cut short; one that stops
// after comments or blank lines has ended; an upstream's read error is
// passed on.
func TestSSEReaderCut(t *testing.T) {
	for _, c := range []struct {
		stream string
		want   error
	}{
		{"data: a\n\ndata: {\"x", errCutInEvent},
		{"data: a\n\ndata: b\n", errCutInEvent},
		{"data: a\r\rdata: b\r", errCutInEvent},
		{"data: a\n\nevent: x\n", errCutInEvent},
		{"data: a\n\n: keep-alive\n", nil},
		{"data: a\n\n: keep", nil},
		{"data: a\n\n\r\n\n", nil},
	} {
		raws, _, _, err := readAll(strings.NewReader(c.stream))
		if !errors.Is(err, c.want) || len(raws) != 1 {
			t.Errorf("%q: %d events, error %v; want 1 and %v", c.stream, len(raws), err, c.want)
		}
	}
	boom := errors.New("connection reset")
	_, _, _, err := readAll(io.MultiReader(strings.NewReader("data: a\n\ndata: b\r"), iotest.ErrReader(boom)))
	if !errors.Is(err, boom) {
		t.Errorf("read error: %v, want %v", err, boom)
	}
}

// TestChatStreamComplete: a chat stream is complete at [DONE], or
// without it once every choice asked for has finished and the usage
// chunk asked for is in.
func TestChatStreamComplete(t *testing.T) {
	const (
		delta  = `{"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}]}`
		finish = `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
		other  = `{"choices":[{"index":1,"delta":{},"finish_reason":"length"}]}`
		usage  = `{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	)
	for _, c := range []struct {
		req      string
		events   []string
		complete bool
	}{
		{`{}`, []string{delta, "[DONE]"}, true},
		{`{}`, []string{delta}, false},
		{`{}`, []string{delta, finish}, true},
		{`{"stream_options":{"include_usage":true}}`, []string{delta, finish}, false},
		{`{"stream_options":{"include_usage":true}}`, []string{delta, finish, usage}, true},
		{`{"n":2}`, []string{delta, finish}, false},
		{`{"n":2}`, []string{delta, finish, other}, true},
		{`{}`, []string{delta, other}, false},
	} {
		var req map[string]any
		dec := json.NewDecoder(strings.NewReader(c.req))
		dec.UseNumber()
		if err := dec.Decode(&req); err != nil {
			t.Fatal(err)
		}
		asm := newAssembler(RouteChatCompletions, req)
		for _, e := range c.events {
			if err := asm.add(sseEvent{data: []byte(e)}); err != nil {
				t.Fatal(err)
			}
		}
		if m := asm.missing(); (m == "") != c.complete {
			t.Errorf("request %s, events %q: missing %q, want complete %v", c.req, c.events, m, c.complete)
		}
	}
}
