// Package sse reads server-sent event streams as the SSE spec (WHATWG
// HTML, "event stream interpretation") reads them: lines ended by CRLF,
// LF or a lone CR, mixed too; a UTF-8 byte order mark at the start
// ignored; comments, id and retry fields skipped; data lines joined by
// newlines. The recording proxy and the builtin providers read every
// upstream's events with it, so that a stream one of them accepts the
// other accepts too.
//
// It reads only: it knows no API's events (what makes a stream complete
// is the caller's, ChatEnd aside) and never writes to the stream.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// MaxEvent is the largest event a Reader returns; an event over it ends
// the stream with ErrTooLarge.
const MaxEvent = 4 << 20

// ErrTooLarge is an event over MaxEvent: a malformed stream, not an
// answer to buffer.
var ErrTooLarge = fmt.Errorf("a stream event is over %d bytes", MaxEvent)

// ErrCut is a stream that stopped inside an event: the SSE spec drops
// such an event, so the stream was cut short.
var ErrCut = errors.New("the stream was cut short inside an event")

// bom is a UTF-8 byte order mark, which the SSE spec ignores at the
// start of a stream.
var bom = []byte("\xef\xbb\xbf")

// Reader splits an event stream into events, each kept as the exact
// bytes that carried it (its lines and the blank line ending it), so a
// caller that passes events on or records them keeps what the server
// sent.
type Reader struct {
	br      *bufio.Reader
	max     int
	events  int  // events returned so far
	crLines bool // the last line ended in a lone CR
}

// NewReader reads events from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 32<<10), max: MaxEvent}
}

// Line endings, as line reports them.
const (
	endNone = iota // the stream ended (or failed) inside the line
	endLF
	endCR
	endCRLF
)

// line appends the next line, with its ending, to raw. A CR is a line
// ending of its own unless a LF follows; when the CR is the last byte
// the server has sent so far, line waits for the next byte to tell,
// except when noWait is set and the line is blank: that CR ends an event
// of a stream whose lines end in lone CRs, and waiting would hold the
// event back until the server's next one.
func (s *Reader) line(raw []byte, noWait bool) ([]byte, int, error) {
	start := len(raw)
	for {
		if _, err := s.br.Peek(1); err != nil {
			return raw, endNone, err
		}
		buf, _ := s.br.Peek(s.br.Buffered())
		// The line ends at the first CR or LF. The ending the last line
		// had is looked for first, so that the search for the other
		// stops there rather than run on through the buffer.
		first, second := byte('\n'), byte('\r')
		if s.crLines {
			first, second = second, first
		}
		n := len(buf)
		if i := bytes.IndexByte(buf, first); i >= 0 {
			n = i + 1
		}
		if i := bytes.IndexByte(buf[:n], second); i >= 0 {
			n = i + 1
		}
		if len(raw)+n > s.max {
			return raw, endNone, ErrTooLarge
		}
		last := buf[n-1]
		raw = append(raw, buf[:n]...)
		_, _ = s.br.Discard(n)
		switch last {
		case '\n':
			s.crLines = false
			return raw, endLF, nil
		case '\r':
		default:
			continue
		}
		if noWait && len(raw)-start == 1 && s.br.Buffered() == 0 {
			s.crLines = true
			return raw, endCR, nil
		}
		next, err := s.br.Peek(1)
		if len(next) == 1 && next[0] == '\n' {
			_, _ = s.br.Discard(1)
			s.crLines = false
			return append(raw, '\n'), endCRLF, nil
		}
		s.crLines = true
		if err != nil && err != io.EOF {
			return raw, endCR, err
		}
		return raw, endCR, nil
	}
}

// Next returns the next event's bytes. At the end of the stream it
// returns io.EOF with whatever followed the last event (blank lines,
// comments), which a client passed the stream on is owed too; a stream
// that stops inside an event is ErrCut, one with an event over MaxEvent
// ErrTooLarge, and a failed read its error.
func (s *Reader) Next() ([]byte, error) {
	var raw []byte
	content := false // raw holds a line that is not blank
	lastCR := false  // the last line ended in a lone CR
	for {
		start := len(raw)
		var end int
		var err error
		raw, end, err = s.line(raw, content && lastCR)
		if err == io.EOF {
			body := raw
			if s.events == 0 {
				body = bytes.TrimPrefix(body, bom)
			}
			if hasField(body) {
				return nil, ErrCut
			}
			return raw, io.EOF
		}
		if err != nil {
			return nil, err
		}
		line := raw[start:]
		if start == 0 && s.events == 0 {
			line = bytes.TrimPrefix(line, bom)
		}
		if len(bytes.TrimRight(line, "\r\n")) > 0 {
			content, lastCR = true, end == endCR
			continue
		}
		if content {
			s.events++
			return raw, nil
		}
	}
}

// Count is the number of events Next has returned.
func (s *Reader) Count() int { return s.events }

// Event reads the fields of raw, the event Next returned last: the
// stream's byte order mark is not part of its first event's first field.
func (s *Reader) Event(raw []byte) Event {
	if s.events == 1 {
		raw = bytes.TrimPrefix(raw, bom)
	}
	return Parse(raw)
}

// cutLine splits the first line off raw: the line without its ending,
// and the rest.
func cutLine(raw []byte) (line, rest []byte) {
	i := bytes.IndexAny(raw, "\r\n")
	if i < 0 {
		return raw, nil
	}
	if raw[i] == '\r' && i+1 < len(raw) && raw[i+1] == '\n' {
		return raw[:i], raw[i+2:]
	}
	return raw[:i], raw[i+1:]
}

// hasField reports whether raw holds a line that is neither blank nor a
// comment: a stream that ends there ends inside an event.
func hasField(raw []byte) bool {
	for len(raw) > 0 {
		var line []byte
		line, raw = cutLine(raw)
		if len(line) > 0 && line[0] != ':' {
			return true
		}
	}
	return false
}

// Event is one event's fields.
type Event struct {
	// Name is the event field ("" when none).
	Name string
	// Data is the data lines joined by \n; nil when none or empty, an
	// event the SSE spec does not dispatch. One data line is not copied:
	// Data shares the event's bytes then.
	Data []byte
}

// Parse reads an event's fields from its bytes (comments and unknown
// fields, id and retry among them, are skipped, as a browser does).
func Parse(raw []byte) Event {
	var ev Event
	lines := 0
	for len(raw) > 0 {
		var line []byte
		line, raw = cutLine(raw)
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			ev.Name = string(value)
		case "data":
			if lines == 0 {
				// The usual event has one data line: it is not copied,
				// and its capacity is cut so that a second line's
				// append copies rather than write over raw.
				ev.Data = value[:len(value):len(value)]
			} else {
				ev.Data = append(append(ev.Data, '\n'), value...)
			}
			lines++
		}
	}
	if len(ev.Data) == 0 {
		ev.Data = nil
	}
	return ev
}
