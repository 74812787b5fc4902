package sse_test

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/sextant-dev/sextant/sdk/sse"
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
	sr := sse.NewReader(r)
	for {
		raw, err := sr.Next()
		if err == io.EOF {
			return raws, string(raw), data, nil
		}
		if err != nil {
			return raws, "", data, err
		}
		raws = append(raws, string(raw))
		if ev := sr.Event(raw); ev.Data != nil {
			data = append(data, string(ev.Data))
		}
	}
}

// TestReaderSplits: every framing the SSE spec allows (CRLF, LF, lone
// CR, mixed; a BOM; id, retry and comment lines; multi-line data) reads
// as the same events whether the stream arrives whole, a byte at a time
// or split in two at any offset, and the events' bytes and what follows
// them are the stream, byte for byte.
func TestReaderSplits(t *testing.T) {
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
// would wait for an server holding its next event back.
type heldReader struct{ r io.Reader }

var errHeld = errors.New("read past what the server has sent")

func (h heldReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if err == io.EOF {
		return n, errHeld
	}
	return n, err
}

// TestReaderDoesNotWait: an event is returned as soon as its blank
// line is in, without reading further — with lone-CR endings too, where
// a LF could still follow the last CR: a stream whose previous line
// ended in a lone CR is not waiting for one. With CRLF endings the
// reader waits for the LF, which a CRLF server sends with its CR.
func TestReaderDoesNotWait(t *testing.T) {
	for _, ev := range []string{"data: a\n\n", "data: a\r\n\r\n", "data: a\r\r", "event: e\rdata: a\r\r", "\xef\xbb\xbfdata: a\r\r"} {
		sr := sse.NewReader(heldReader{strings.NewReader(ev)})
		raw, err := sr.Next()
		if err != nil || string(raw) != ev || string(sr.Event(raw).Data) != "a" {
			t.Errorf("%q: read %q, %v; want the event without reading on", ev, raw, err)
		}
	}
}

// TestReaderCut: a stream that stops inside an event (in a line, or
// after a field line with no blank line) is cut short; one that stops
// after comments or blank lines has ended; an server's read error is
// passed on.
func TestReaderCut(t *testing.T) {
	for _, c := range []struct {
		stream string
		want   error
	}{
		{"data: a\n\ndata: {\"x", sse.ErrCut},
		{"data: a\n\ndata: b\n", sse.ErrCut},
		{"data: a\r\rdata: b\r", sse.ErrCut},
		{"data: a\n\nevent: x\n", sse.ErrCut},
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

// TestReaderTooLarge: an event over MaxEvent is ErrTooLarge, in one line
// or across many, and a stream of events each under it reads whole.
func TestReaderTooLarge(t *testing.T) {
	line := "data: " + strings.Repeat("x", 1<<20) + "\n"
	for _, c := range []struct {
		name, stream string
		want         error
	}{
		{"one line", "data: " + strings.Repeat("x", sse.MaxEvent) + "\n\n", sse.ErrTooLarge},
		{"many lines", strings.Repeat(line, 5) + "\n", sse.ErrTooLarge},
		{"many events", strings.Repeat(line+"\n", 5), nil},
	} {
		raws, _, _, err := readAll(strings.NewReader(c.stream))
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %d events, error %v; want %v", c.name, len(raws), err, c.want)
		}
	}
}

// TestChatEnd: a chat stream without [DONE] is complete once every
// choice asked for and every choice it carried has finished, and the
// usage chunk asked for is in; Missing names what is not.
func TestChatEnd(t *testing.T) {
	for _, c := range []struct {
		end  sse.ChatEnd
		want string
	}{
		{sse.ChatEnd{Choices: 1, Asked: 1}, "its final event (data: [DONE], or a chunk with a finish_reason)"},
		{sse.ChatEnd{Asked: 1}, "its final event (data: [DONE], or a chunk with a finish_reason)"},
		{sse.ChatEnd{Choices: 1, Finished: 1, Asked: 1}, ""},
		{sse.ChatEnd{Choices: 1, Finished: 1, Asked: 1, AskedUsage: true}, "the usage chunk stream_options.include_usage asks for (and no data: [DONE])"},
		{sse.ChatEnd{Choices: 1, Finished: 1, Asked: 1, AskedUsage: true, Usage: true}, ""},
		{sse.ChatEnd{Choices: 1, Finished: 1, Asked: 2}, "a finish_reason for each of its choices (1 of 2 finished, and no data: [DONE])"},
		{sse.ChatEnd{Choices: 3, Finished: 2, Asked: 1}, "a finish_reason for each of its choices (2 of 3 finished, and no data: [DONE])"},
		{sse.ChatEnd{Choices: 2, Finished: 2, Asked: 2}, ""},
	} {
		if got := c.end.Missing(); got != c.want {
			t.Errorf("%+v: missing %q, want %q", c.end, got, c.want)
		}
	}
}
