package llmhttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/sse"
)

// maxErrorBody bounds the body of a refused streamed request read for
// its error message.
const maxErrorBody = 1 << 20

// PostStream sends body to target as Post does and returns the answer
// with its body unread (sdk.HTTPStream), for a streamed answer read as it
// arrives; the caller closes it. Failures to get an answer are typed as
// Post types them. ctx bounds the whole exchange, body included.
//
// PostStream works natively only (a builtin provider, or one in a process
// plugin); in a wasm module sdk.HTTPStream fails.
func (c Client) PostStream(ctx context.Context, target string, header map[string][]string, body []byte, creds ...sdk.HeaderCredential) (*sdk.HTTPStreamResponse, error) {
	where := "POST " + RedactURL(target)
	if err := ctx.Err(); err != nil {
		return nil, c.contextError(where, err)
	}
	if d, ok := ctx.Deadline(); ok && time.Until(d) < time.Millisecond {
		return nil, c.timeoutError(where)
	}
	req := &sdk.HTTPRequest{Method: "POST", URL: target, Header: header, Body: body, Credentials: creds}
	resp, err := sdk.HTTPStream(ctx, req)
	if err != nil {
		return nil, c.transportError(ctx, where, err)
	}
	return resp, nil
}

// ReadAll reads a streamed answer's whole body (bounded by maxErrorBody
// when it is a refusal, sdk.MaxHTTPBody otherwise) into an
// sdk.HTTPResponse, closing it: for an answer that is not a stream after
// all (a refusal, or a server that ignored "stream": true).
func (c Client) ReadAll(ctx context.Context, resp *sdk.HTTPStreamResponse) (*sdk.HTTPResponse, error) {
	defer resp.Body.Close()
	limit := int64(sdk.MaxHTTPBody)
	if resp.Status < 200 || resp.Status > 299 {
		limit = maxErrorBody
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return nil, c.StreamError(ctx, err)
	}
	return &sdk.HTTPResponse{Status: resp.Status, Header: resp.Header, Body: body}, nil
}

// StreamError classifies a failure to read a streamed body: the
// deadline (CodeTimeout) or a lost or oversized stream (CodeUnavailable).
func (c Client) StreamError(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return sdk.Errorf(sdk.CodeTimeout, "%s: stream: no end before the deadline", c.Name)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s: stream: %w", c.Name, ctx.Err())
	}
	var se *sdk.Error
	if errors.As(err, &se) {
		return err
	}
	return sdk.Errorf(sdk.CodeUnavailable, "%s: stream broken: %v", c.Name, err)
}

// IsEventStream reports whether an answer's Content-Type is
// text/event-stream.
func IsEventStream(h map[string][]string) bool {
	ct := strings.ToLower(Header(h, "Content-Type"))
	return strings.HasPrefix(ct, "text/event-stream")
}

// SSE reads server-sent events from a stream as they arrive, framed as
// the SSE spec allows (lines ended by CRLF, LF or a lone CR, a leading
// byte order mark, multi-line data): the same reader the recording proxy
// reads upstreams with, so a server the proxy records is one a provider
// reads.
type SSE struct {
	r    *sse.Reader
	name string // the client's name, for errors
	n    int    // events with data read
}

// NewSSE reads events from r; name prefixes its errors.
func NewSSE(r io.Reader, name string) *SSE {
	return &SSE{r: sse.NewReader(r), name: name}
}

// Next returns the next event that carries data: its name ("" when it
// has none) and its data lines joined by newlines. Comments, ids and
// retry fields are skipped, as are events without data. At the clean
// end of the stream it returns io.EOF; a stream that ends inside an
// event or holds one over sse.MaxEvent is an *sdk.Error
// (CodeUnavailable), and a failed read is its error.
func (s *SSE) Next() (event, data string, err error) {
	for {
		raw, err := s.r.Next()
		switch {
		case err == io.EOF:
			return "", "", io.EOF
		case errors.Is(err, sse.ErrCut):
			return "", "", sdk.Errorf(sdk.CodeUnavailable, "%s: stream cut short inside event %d", s.name, s.n+1)
		case errors.Is(err, sse.ErrTooLarge):
			return "", "", sdk.Errorf(sdk.CodeUnavailable, "%s: stream event %d is over %d bytes", s.name, s.n+1, sse.MaxEvent)
		case err != nil:
			return "", "", err
		}
		if ev := s.r.Event(raw); ev.Data != nil {
			s.n++
			return ev.Name, string(ev.Data), nil
		}
	}
}

// Count is the number of events with data read so far.
func (s *SSE) Count() int { return s.n }

// Assembler builds one answer from the events of a streamed answer.
type Assembler interface {
	// Add takes the data of the stream's event n (counted from 1) and
	// returns the text it adds to the answer and whether the stream ended.
	Add(data string, n int) (delta string, done bool, err error)
	// Finish returns the answer once the events are read: an error for a
	// stream cut short, never a shorter answer. n is how many were read.
	Finish(n int) (*sdk.ChatResponse, error)
}

// Stream reads the answer to a streamed request, sr, handing its text to
// onDelta as it arrives: prefix (when not empty) first, then each event's
// delta from a. A server that answered in one piece (a status other than
// 2xx, or a body that is not an event stream) is read whole and turned
// into the answer or the error by whole; its text is one delta. Stream
// closes sr's body.
func (c Client) Stream(ctx context.Context, sr *sdk.HTTPStreamResponse, prefix string, whole func(*sdk.HTTPResponse) (*sdk.ChatResponse, error), a Assembler, onDelta func(string) error) (*sdk.ChatResponse, error) {
	if sr.Status < 200 || sr.Status > 299 || !IsEventStream(sr.Header) {
		resp, err := c.ReadAll(ctx, sr)
		if err != nil {
			return nil, err
		}
		out, err := whole(resp)
		if err != nil {
			return nil, err
		}
		if out.Text != "" {
			if err := onDelta(out.Text); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	defer sr.Body.Close()
	if prefix != "" {
		if err := onDelta(prefix); err != nil {
			return nil, err
		}
	}
	events := NewSSE(sr.Body, c.Name)
	for {
		_, data, err := events.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, c.StreamError(ctx, err)
		}
		delta, done, err := a.Add(data, events.Count())
		if err != nil {
			return nil, err
		}
		if delta != "" {
			if err := onDelta(delta); err != nil {
				return nil, err
			}
		}
		if done {
			break
		}
	}
	return a.Finish(events.Count())
}
