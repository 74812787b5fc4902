// Package llmhttp is how the first-party LLM providers reach their APIs:
// every request goes through Client.Post, which calls sdk.HTTP, so the same
// code runs as a builtin, a process plugin and a sandboxed wasm module
// (where sdk.HTTP is the host's allow-listed http function and there are
// no sockets). It also classifies HTTP failures into typed sdk.Error codes
// and keeps API keys out of error text.
package llmhttp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sextant-dev/sextant/sdk"
)

// Client sends one provider's requests; Name prefixes its errors.
type Client struct {
	Name string
}

// reserveMax bounds the part of a call's remaining time that post keeps
// back for answering the host.
const reserveMax = 250 * time.Millisecond

// Post sends body to target and returns the answer, whatever its status.
// A request that gets no answer fails with an *sdk.Error: CodeTimeout when
// ctx's deadline ran out, CodeAuth when the wasm host refused the host:port
// (retrying cannot help), CodeUnavailable otherwise.
//
// # Notes
//
//   - sdk.HTTP takes no context, so Post turns ctx's deadline into the
//     request's timeout, keeping back a tenth of the time left (at most
//     reserveMax) so that the typed timeout reaches the host before the
//     host's own deadline does: the process transport kills a plugin that
//     outlives the deadline, and the host would see a crash, not a timeout.
//   - A cancelled ctx returns at once; the request itself runs on in the
//     background until its timeout. In a wasm module the host function
//     blocks the only thread and the host's own context ends it.
//   - In a wasm module the guest's ctx carries no deadline: the host
//     bounds the http call with its own call deadline instead.
//   - creds name headers the host fills with a credential the plugin
//     never holds (sdk.HeaderCredential).
func (c Client) Post(ctx context.Context, target string, header map[string][]string, body []byte, creds ...sdk.HeaderCredential) (*sdk.HTTPResponse, error) {
	where := "POST " + RedactURL(target)
	req := &sdk.HTTPRequest{Method: "POST", URL: target, Header: header, Body: body, Credentials: creds}
	if d, ok := ctx.Deadline(); ok {
		left := time.Until(d)
		left -= min(left/10, reserveMax)
		if left < time.Millisecond {
			return nil, c.timeoutError(where)
		}
		req.TimeoutMS = left.Milliseconds()
	}
	if err := ctx.Err(); err != nil {
		return nil, c.contextError(where, err)
	}
	type result struct {
		resp *sdk.HTTPResponse
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := sdk.HTTP(req)
		done <- result{resp, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, c.transportError(ctx, where, r.err)
		}
		return r.resp, nil
	case <-ctx.Done():
		return nil, c.contextError(where, ctx.Err())
	}
}

func (c Client) timeoutError(where string) *sdk.Error {
	return sdk.Errorf(sdk.CodeTimeout, "%s: %s: no response before the deadline", c.Name, where)
}

func (c Client) contextError(where string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return c.timeoutError(where)
	}
	return fmt.Errorf("%s: %s: %w", c.Name, where, err)
}

// transportError classifies a request that got no answer. The wasm host
// hands errors over as text, so the text is what is matched.
func (c Client) transportError(ctx context.Context, where string, err error) error {
	msg := err.Error()
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(ctx.Err(), context.DeadlineExceeded),
		strings.Contains(msg, "deadline exceeded"), strings.Contains(msg, "Client.Timeout"):
		return c.timeoutError(where)
	case strings.Contains(msg, "not granted to plugin"):
		return &sdk.Error{Code: sdk.CodeAuth, Message: c.Name + ": " + msg}
	case strings.Contains(msg, "unexpected EOF"):
		return sdk.Errorf(sdk.CodeUnavailable, "%s: %s: response body truncated (unexpected EOF)", c.Name, where)
	}
	return &sdk.Error{Code: sdk.CodeUnavailable, Message: c.Name + ": " + msg}
}

// StatusCode classifies an HTTP status the upstream answered with.
func StatusCode(status int) sdk.Code {
	switch {
	case status == 429:
		return sdk.CodeRateLimited
	case status == 401 || status == 402 || status == 403:
		return sdk.CodeAuth
	case status == 408 || status >= 500:
		return sdk.CodeUnavailable
	case status >= 400:
		return sdk.CodeBadRequest
	}
	return sdk.CodeUnavailable // 1xx or 3xx: nothing a caller can use
}

// StatusError is the error for a non-2xx answer: "NAME: http 429 KIND: MESSAGE".
// Without a parsed API error, the body (clipped to one line) is the message.
func (c Client) StatusError(resp *sdk.HTTPResponse, kind, message string) *sdk.Error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: http %d", c.Name, resp.Status)
	if kind != "" {
		b.WriteString(" " + kind)
	}
	switch {
	case message != "":
		b.WriteString(": " + message)
	case kind == "" && len(strings.TrimSpace(string(resp.Body))) > 0:
		b.WriteString(": " + Clip(string(resp.Body), 200))
	case kind == "":
		b.WriteString(" (empty body)")
	}
	return &sdk.Error{Code: StatusCode(resp.Status), Message: b.String(), RetryAfter: RetryAfter(resp.Header, time.Now())}
}

// Malformed is the error for a 2xx answer that does not decode.
func (c Client) Malformed(resp *sdk.HTTPResponse, err error) *sdk.Error {
	return sdk.Errorf(sdk.CodeUnavailable, "%s: malformed response (http %d, %d bytes): %v", c.Name, resp.Status, len(resp.Body), err)
}

// RetryAfter reads how long the upstream asked to wait: retry-after-ms
// (OpenAI), else Retry-After as seconds or as an HTTP date (rounded up to
// the second, the date's own precision). Zero when absent or unreadable.
func RetryAfter(h map[string][]string, now time.Time) time.Duration {
	if v := Header(h, "retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < math.MaxInt64/float64(time.Millisecond) {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := Header(h, "retry-after")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < math.MaxInt64/float64(time.Second) {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	for _, layout := range []string{time.RFC1123, time.RFC850, time.ANSIC} {
		if t, err := time.Parse(layout, v); err == nil {
			d := t.Sub(now)
			if d <= 0 {
				return 0
			}
			return (d + time.Second - 1).Truncate(time.Second)
		}
	}
	return 0
}

// Header returns the first value of the header called name, in any case.
func Header(h map[string][]string, name string) string {
	for k, vs := range h {
		if strings.EqualFold(k, name) && len(vs) > 0 {
			return strings.TrimSpace(vs[0])
		}
	}
	return ""
}

// Scrub removes the API key from err's text. Upstreams (and servers that
// imitate them) may echo a refused key back; it must not reach the host's
// logs, store or reports.
func Scrub(err error, key string) error {
	if err == nil || len(key) < 4 {
		return err
	}
	var e *sdk.Error
	if !errors.As(err, &e) {
		if !strings.Contains(err.Error(), key) {
			return err
		}
		return errors.New(strings.ReplaceAll(err.Error(), key, "[redacted]"))
	}
	if !strings.Contains(e.Message, key) {
		return err
	}
	c := *e
	c.Message = strings.ReplaceAll(c.Message, key, "[redacted]")
	return &c
}

// RedactURL hides a password in a URL's user info.
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return s
	}
	return u.Redacted()
}

// Clip returns s on one line, cut to at most n bytes (on a rune boundary).
func Clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
