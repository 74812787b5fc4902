package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/proxy"
)

// streamSeen is what stream-chat.mjs prints.
type streamSeen struct {
	Chunks []json.RawMessage `json:"chunks"`
	Text   string            `json:"text"`
	Finish string            `json:"finish"`
	Usage  map[string]int    `json:"usage"`
	Error  *struct {
		Name    string `json:"name"`
		Status  *int   `json:"status"`
		Message string `json:"message"`
	} `json:"error"`
}

// TestOpenAINpmStreamWithoutDone drives the proxy with the official
// openai npm client's streamed chat against an upstream that ends its
// stream without data: [DONE], as vLLM, llama.cpp's server, Ollama and
// LiteLLM may, written byte by byte (lines ended by LF, or by lone CRs).
// A finished stream (finish_reason, then the usage chunk asked for) is
// recorded, and replayed with the upstream stopped the client sees
// exactly what it saw live, no [DONE] added; a stream cut before its
// finish_reason makes the client raise the proxy's error, is not
// recorded, and misses in replay.
func TestOpenAINpmStreamWithoutDone(t *testing.T) {
	dir := npmClient(t)
	for _, c := range []struct {
		name, stream string
		complete     bool
	}{
		{"finished", frame("\n", chunkHi, chunkStop, chunkUsage), true},
		{"finished-cr", frame("\r", chunkHi, chunkStop, chunkUsage), true},
		{"cut", frame("\n", chunkHi), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := framedUpstream(t, c.stream, byteByByte)
			st := openStore(t, t.TempDir())
			live := serve(t, toolProviders(t, up).live(st))
			out := runScript(t, dir, "stream-chat.mjs", live.URL+"/v1", "no-done")
			var seen streamSeen
			if err := json.Unmarshal(out, &seen); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			tr, err := st.Tree(context.Background(), "no-done")
			if err != nil {
				t.Fatal(err)
			}
			up.Close()
			replay := serve(t, proxy.Config{Store: st, Replay: true})
			replayed := runScript(t, dir, "stream-chat.mjs", replay.URL+"/v1", "no-done")
			if !c.complete {
				if seen.Error == nil || seen.Error.Name != "APIError" || !strings.Contains(seen.Error.Message, "cut short") || seen.Text != "Hi" {
					t.Errorf("live: %s; want the text Hi, then an APIError saying the stream was cut short", out)
				}
				if len(tr.Recordings) != 0 {
					t.Errorf("%d recordings, want none", len(tr.Recordings))
				}
				var miss streamSeen
				if err := json.Unmarshal(replayed, &miss); err != nil || miss.Error == nil || miss.Error.Name != "NotFoundError" {
					t.Errorf("replayed: %s (%v), want a NotFoundError", replayed, err)
				}
				return
			}
			if seen.Error != nil || len(seen.Chunks) != 3 || seen.Text != "Hi" || seen.Finish != "stop" || seen.Usage["completion_tokens"] != 1 {
				t.Fatalf("live: %s; want 3 chunks, the text Hi, finish stop and the usage", out)
			}
			if len(tr.Recordings) != 1 {
				t.Fatalf("%d recordings, want 1", len(tr.Recordings))
			}
			if !bytes.Equal(replayed, out) {
				t.Errorf("replayed, the client saw\n%s\nlive it saw\n%s", replayed, out)
			}
		})
	}
}
