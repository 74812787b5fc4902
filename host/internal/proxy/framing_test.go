package proxy_test

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/host/internal/proxy"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// The chat chunks the framing tests' upstream streams.
const (
	chunkHi    = `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}`
	chunkStop  = `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
	chunkUsage = `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`
	// chunkHiSplit is chunkHi as two data lines, which a client joins
	// with a newline: the same JSON.
	chunkHiSplit = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\ndata: \"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hi\"},\"finish_reason\":null}]}"
)

const (
	usageBody   = `{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}`
	noUsageBody = `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"x"}]}`
)

// frame writes events as an upstream does, each line ended by nl and
// each event by a blank line; an event's lines are separated by \n in
// the argument, and one starting with { or [ is data.
func frame(nl string, events ...string) string {
	var b strings.Builder
	for _, ev := range events {
		for line := range strings.SplitSeq(ev, "\n") {
			if strings.HasPrefix(line, "{") || strings.HasPrefix(line, "[") {
				line = "data: " + line
			}
			b.WriteString(line + nl)
		}
		b.WriteString(nl)
	}
	return b.String()
}

// how an upstream sends its stream.
type sending int

const (
	byteByByte sending = iota // each byte its own write and flush
	gzipped                   // gzip-encoded, each byte flushed through it
	lostEnd                   // byte by byte, then the connection closes before the chunked body's last chunk
)

// framedUpstream is an upstream on a real port answering every chat call
// 200 with stream, sent as how says, or in the pieces given (each its own
// write and flush).
func framedUpstream(t *testing.T, stream string, how sending, pieces ...string) *toolUpstream {
	up := newToolUpstream(t)
	if pieces == nil {
		for i := range len(stream) {
			pieces = append(pieces, stream[i:i+1])
		}
	}
	up.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if how == lostEnd {
			conn, buf, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			fmt.Fprint(buf, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
			for _, p := range pieces {
				fmt.Fprintf(buf, "%x\r\n%s\r\n", len(p), p)
				_ = buf.Flush()
			}
			return // no "0\r\n\r\n": the body never ends, the connection does
		}
		w.Header().Set("Content-Type", "text/event-stream")
		f := http.NewResponseController(w)
		write := func(p string) { _, _ = w.Write([]byte(p)); _ = f.Flush() }
		if how == gzipped {
			if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
				http.Error(w, "the proxy did not accept gzip", http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Encoding", "gzip")
			gz := gzip.NewWriter(w)
			defer gz.Close()
			write = func(p string) { _, _ = gz.Write([]byte(p)); _ = gz.Flush(); _ = f.Flush() }
		}
		for _, p := range pieces {
			write(p)
		}
	})
	return up
}

// TestStreamFraming: an upstream chat stream framed as conformant servers
// frame theirs, written byte by byte — lines ended by CRLF, LF or a lone
// CR; gzip-encoded (the encoding the proxy's client asks for); a UTF-8
// BOM first; comments, retry and id fields; data split over several
// lines; no data: [DONE] after a finished stream, as vLLM, llama.cpp's
// server, Ollama and LiteLLM may send — reaches the client as the
// upstream sent it (decoded), is recorded, and replays byte for byte with
// the upstream stopped, and unstreamed with the text and usage its
// events assemble to.
func TestStreamFraming(t *testing.T) {
	for _, c := range []struct {
		name, body, stream string
		how                sending
		usage              int // completion tokens the whole answer reports, -1 for none
	}{
		{"crlf", usageBody, frame("\r\n", chunkHi, chunkStop, chunkUsage, "[DONE]"), byteByByte, 1},
		{"lf", usageBody, frame("\n", chunkHi, chunkStop, chunkUsage, "[DONE]"), byteByByte, 1},
		{"cr", usageBody, frame("\r", chunkHi, chunkStop, chunkUsage, "[DONE]"), byteByByte, 1},
		{"gzip", usageBody, frame("\n", chunkHi, chunkStop, chunkUsage, "[DONE]"), gzipped, 1},
		{"gzip-cr", usageBody, frame("\r", chunkHi, chunkStop, chunkUsage, "[DONE]"), gzipped, 1},
		{"comment-first", usageBody, frame("\n", ": PROCESSING", chunkHi, chunkStop, chunkUsage, "[DONE]"), byteByByte, 1},
		{"bom", usageBody, "\xef\xbb\xbf" + frame("\n", chunkHi, chunkStop, chunkUsage, "[DONE]"), byteByByte, 1},
		{"bom-cr", usageBody, "\xef\xbb\xbf" + frame("\r", chunkHi, chunkStop, chunkUsage, "[DONE]"), byteByByte, 1},
		{"retry-id-comments", usageBody, frame("\n", "retry: 3000", "id: 1\n"+chunkHi+"\n: between the lines", ": keep-alive",
			"id: 2\n"+chunkStop, "id: 3\nevent: message\n"+chunkUsage, "[DONE]") + ": bye\n\n", byteByByte, 1},
		{"multiline-data", usageBody, frame("\n", chunkHiSplit, chunkStop, chunkUsage, "[DONE]"), byteByByte, 1},
		{"multiline-data-cr", usageBody, frame("\r", chunkHiSplit, chunkStop, chunkUsage, "[DONE]"), byteByByte, 1},
		{"no-done", usageBody, frame("\n", chunkHi, chunkStop, chunkUsage), byteByByte, 1},
		{"no-done-crlf", usageBody, frame("\r\n", chunkHi, chunkStop, chunkUsage), byteByByte, 1},
		{"no-done-cr", usageBody, frame("\r", chunkHi, chunkStop, chunkUsage), byteByByte, 1},
		{"no-done-no-usage-asked", noUsageBody, frame("\n", chunkHi, chunkStop), byteByByte, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := framedUpstream(t, c.stream, c.how)
			st := openStore(t, t.TempDir())
			live := serve(t, toolProviders(t, up).live(st))
			task := map[string]string{proxy.HeaderTask: "framing"}
			resp, got := post(t, live.URL+proxy.RouteChatCompletions, c.body, task)
			if resp.StatusCode != http.StatusOK || string(got) != c.stream || resp.Header.Get(proxy.HeaderRecorded) != "false" {
				t.Fatalf("live: %d %q, recorded %q; want 200 and the upstream's stream %q", resp.StatusCode, got, resp.Header.Get(proxy.HeaderRecorded), c.stream)
			}
			tr, err := st.Tree(context.Background(), "framing")
			if err != nil {
				t.Fatal(err)
			}
			if len(tr.Recordings) != 1 || tr.Executions[0].Execution.Status != store.StatusCompleted {
				t.Fatalf("%d recordings, execution %+v; want 1 and completed", len(tr.Recordings), tr.Executions[0].Execution)
			}
			up.Close()
			replay := serve(t, proxy.Config{Store: st, Replay: true})
			resp, got = post(t, replay.URL+proxy.RouteChatCompletions, c.body, nil)
			if resp.StatusCode != http.StatusOK || string(got) != c.stream {
				t.Errorf("replayed: %d %q, want the recorded stream %q", resp.StatusCode, got, c.stream)
			}
			resp, got = post(t, replay.URL+proxy.RouteChatCompletions, unstreamed(t, c.body), nil)
			var whole struct {
				Choices []struct {
					Message      struct{ Content string }
					FinishReason string `json:"finish_reason"`
				}
				Usage *struct {
					CompletionTokens int `json:"completion_tokens"`
				}
			}
			if err := json.Unmarshal(got, &whole); err != nil || resp.StatusCode != http.StatusOK || len(whole.Choices) != 1 ||
				whole.Choices[0].Message.Content != "Hi" || whole.Choices[0].FinishReason != "stop" ||
				(c.usage < 0) != (whole.Usage == nil) || whole.Usage != nil && whole.Usage.CompletionTokens != c.usage {
				t.Errorf("replayed unstreamed: %d %s (%v), want the answer Hi, finished, with usage %d", resp.StatusCode, got, err, c.usage)
			}
		})
	}
}

// TestStreamIncomplete: a chat stream that is not complete — it ends
// cleanly but before [DONE] and before its finish_reason or the usage
// chunk the request asked for, or the upstream closes inside an event
// (even after a finished stream, even at [DONE]), or the connection
// ends before the chunked body's last chunk — reaches the client as far
// as its last whole event, then an error event in OpenAI's shape, which
// the official clients raise; the call is failed, marked
// sextant.proxy.stream_broken, and nothing is recorded, so a replay
// misses.
func TestStreamIncomplete(t *testing.T) {
	for _, c := range []struct {
		name, body, passed, rest string
		how                      sending
		why                      string
	}{
		{"no-finish", usageBody, frame("\n", chunkHi), "", byteByByte, "ended before its final event"},
		{"no-finish-cr", usageBody, frame("\r", chunkHi), "", byteByByte, "ended before its final event"},
		{"no-usage", usageBody, frame("\n", chunkHi, chunkStop), "", byteByByte, "usage chunk"},
		{"mid-event", usageBody, frame("\n", chunkHi), `data: {"id":"c","object":"chat.completion.chunk","choi`, byteByByte, "inside an event"},
		{"mid-event-crlf", usageBody, frame("\r\n", chunkHi), "data: {\"id\":\"c\"}\r\n", byteByByte, "inside an event"},
		{"mid-event-after-finish", usageBody, frame("\n", chunkHi, chunkStop, chunkUsage), "data: [DONE]\n", byteByByte, "inside an event"},
		{"mid-event-after-finish-cr", usageBody, frame("\r", chunkHi, chunkStop, chunkUsage), "data: [DONE]\r", byteByByte, "inside an event"},
		{"chunked-body-cut", usageBody, frame("\n", chunkHi, chunkStop, chunkUsage), "", lostEnd, "connection ended before its body did"},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := framedUpstream(t, c.passed+c.rest, c.how)
			st := openStore(t, t.TempDir())
			live := serve(t, toolProviders(t, up).live(st))
			resp, got := post(t, live.URL+proxy.RouteChatCompletions, c.body, map[string]string{proxy.HeaderTask: "cut"})
			errEvent, ok := strings.CutPrefix(string(got), c.passed)
			var e struct {
				Error struct{ Message, Code string }
			}
			if resp.StatusCode != http.StatusOK || !ok || !strings.HasPrefix(errEvent, "data: ") || !strings.HasSuffix(errEvent, "\n\n") ||
				json.Unmarshal([]byte(strings.TrimPrefix(errEvent, "data: ")), &e) != nil ||
				!strings.Contains(e.Error.Message, "cut short") || !strings.Contains(e.Error.Message, c.why) {
				t.Fatalf("live: %d %q; want 200, %q, then an error event saying the stream was cut short (%s)", resp.StatusCode, got, c.passed, c.why)
			}
			tr, err := st.Tree(context.Background(), "cut")
			if err != nil {
				t.Fatal(err)
			}
			if len(tr.Recordings) != 0 || tr.Executions[0].Execution.Status != store.StatusFailed ||
				!tr.Executions[0].Spans[0].Attributes["sextant.proxy.stream_broken"].Bool() {
				t.Fatalf("%d recordings, execution %+v; want none, failed and marked stream_broken", len(tr.Recordings), tr.Executions[0].Execution)
			}
			replay := serve(t, proxy.Config{Store: st, Replay: true})
			if r, b := post(t, replay.URL+proxy.RouteChatCompletions, c.body, nil); r.StatusCode != http.StatusNotFound {
				t.Errorf("replay: %d %s, want 404 (nothing recorded)", r.StatusCode, b)
			}
		})
	}
}

// TestStreamSplitAnywhere: a stream holding every framing edge at once (a
// BOM, lone-CR line ends, retry, id and comment lines, data over two
// lines, no [DONE]) sent as two writes, split at every offset, reaches
// the client whole and is recorded each time. (TestSSEReaderSplits
// splits the proxy's reads themselves at every offset.)
func TestStreamSplitAnywhere(t *testing.T) {
	stream := "\xef\xbb\xbf" + frame("\r", ": hello", "retry: 100", "id: 1\n"+chunkHiSplit, "id: 2\n: thinking\n"+chunkStop, chunkUsage)
	var (
		mu    sync.Mutex
		split int
	)
	up := newToolUpstream(t)
	up.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		k := split
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		for _, p := range []string{stream[:k], stream[k:]} {
			_, _ = w.Write([]byte(p))
			_ = http.NewResponseController(w).Flush()
		}
	})
	st := openStore(t, t.TempDir())
	live := serve(t, toolProviders(t, up).live(st))
	for k := 1; k < len(stream); k++ {
		mu.Lock()
		split = k
		mu.Unlock()
		task := fmt.Sprintf("split-%d", k)
		resp, got := post(t, live.URL+proxy.RouteChatCompletions, usageBody, map[string]string{proxy.HeaderTask: task})
		if resp.StatusCode != http.StatusOK || string(got) != stream {
			t.Fatalf("split at %d: %d %q, want the stream %q", k, resp.StatusCode, got, stream)
		}
		tr, err := st.Tree(context.Background(), task)
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.Recordings) != 1 {
			t.Fatalf("split at %d: %d recordings, want 1", k, len(tr.Recordings))
		}
	}
	up.Close()
	replay := serve(t, proxy.Config{Store: st, Replay: true})
	if resp, got := post(t, replay.URL+proxy.RouteChatCompletions, usageBody, nil); resp.StatusCode != http.StatusOK || string(got) != stream {
		t.Errorf("replayed: %d %q, want %q", resp.StatusCode, got, stream)
	}
}

// TestStreamBareCRNotHeldBack: with lines ended by lone CRs, an event
// reaches the client while the upstream holds its next one back: the
// proxy does not wait for a LF that might follow the event's last CR.
func TestStreamBareCRNotHeldBack(t *testing.T) {
	first, rest := frame("\r", chunkHi), frame("\r", chunkStop, chunkUsage)
	release := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	up := newToolUpstream(t)
	up.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(first))
		_ = http.NewResponseController(w).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		_, _ = w.Write([]byte(rest))
	})
	t.Cleanup(open)
	st := openStore(t, t.TempDir())
	live := serve(t, toolProviders(t, up).live(st))
	req, err := http.NewRequest(http.MethodPost, live.URL+proxy.RouteChatCompletions, strings.NewReader(usageBody))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got := make(chan string, 1)
	go func() {
		b := make([]byte, len(first))
		n, _ := io.ReadFull(resp.Body, b)
		got <- string(b[:n])
	}()
	select {
	case s := <-got:
		if s != first {
			t.Fatalf("first event %q, want %q", s, first)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the first event did not reach the client while the upstream held the next back: the proxy waits after a lone CR")
	}
	open()
	b, err := io.ReadAll(resp.Body)
	if err != nil || string(b) != rest {
		t.Fatalf("rest %q (%v), want %q", b, err, rest)
	}
	if _, err := st.Recording(context.Background(), resp.Header.Get(proxy.HeaderHash)); err != nil {
		t.Errorf("recording: %v", err)
	}
}

// TestStreamUpstreamErrorEvent: an upstream that reports an error in its
// stream and closes it (OpenAI's data: {"error":…} without [DONE],
// Anthropic's event: error without message_stop) is passed on as it
// came, with no error of the proxy's added; the call is failed and not
// recorded. The same Anthropic stream finished, its lines ended by lone
// CRs after a BOM, is recorded and replays byte for byte.
func TestStreamUpstreamErrorEvent(t *testing.T) {
	const anthropicBody = `{"model":"claude-up","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"x"}]}`
	start := frame("\r", "event: message_start\n"+`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-up","content":[],"usage":{"input_tokens":3,"output_tokens":1}}}`,
		"event: content_block_start\n"+`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		": keep-alive",
		"event: content_block_delta\n"+`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`)
	finish := frame("\r", "event: content_block_stop\n"+`{"type":"content_block_stop","index":0}`,
		"event: message_delta\n"+`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":1}}`,
		"event: message_stop\n"+`{"type":"message_stop"}`)
	for _, c := range []struct {
		name, route, body, stream string
		recorded                  bool
	}{
		{"openai-error", proxy.RouteChatCompletions, usageBody, frame("\n", chunkHi, `{"error":{"message":"the model is overloaded","type":"server_error"}}`), false},
		{"anthropic-error", proxy.RouteMessages, anthropicBody, start + frame("\r", "event: error\n"+`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`), false},
		{"anthropic-cr", proxy.RouteMessages, anthropicBody, "\xef\xbb\xbf" + start + finish, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := framedUpstream(t, c.stream, byteByByte)
			st := openStore(t, t.TempDir())
			live := serve(t, toolProviders(t, up).live(st))
			resp, got := post(t, live.URL+c.route, c.body, map[string]string{proxy.HeaderTask: "err"})
			if resp.StatusCode != http.StatusOK || string(got) != c.stream {
				t.Fatalf("live: %d %q, want 200 and the upstream's stream %q as it came", resp.StatusCode, got, c.stream)
			}
			tr, err := st.Tree(context.Background(), "err")
			if err != nil {
				t.Fatal(err)
			}
			if c.recorded != (len(tr.Recordings) == 1) || c.recorded != (tr.Executions[0].Execution.Status == store.StatusCompleted) {
				t.Fatalf("%d recordings, execution %+v; want recorded %v", len(tr.Recordings), tr.Executions[0].Execution, c.recorded)
			}
			up.Close()
			replay := serve(t, proxy.Config{Store: st, Replay: true})
			resp, got = post(t, replay.URL+c.route, c.body, nil)
			if c.recorded && (resp.StatusCode != http.StatusOK || string(got) != c.stream) || !c.recorded && resp.StatusCode != http.StatusNotFound {
				t.Errorf("replayed: %d %q; want recorded %v", resp.StatusCode, got, c.recorded)
			}
		})
	}
}
