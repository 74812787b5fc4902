package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/proxy"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// TestResponsesStatus: a Responses answer the upstream sends whole with
// HTTP 200 is recorded as its streamed form is. A completed or incomplete
// response is recorded and replayed; a failed, cancelled, queued or
// in_progress one (a streamed call's response.failed, or a stream with no
// final event) is passed on as it was, recorded failed, and never
// replayed, whole or asked for as a stream; and so is one the upstream
// streams to a call that asked for it whole.
func TestResponsesStatus(t *testing.T) {
	for _, status := range []string{"completed", "incomplete", "failed", "cancelled", "queued", "in_progress"} {
		for _, mode := range []string{"whole", "stream", "upstream-streams"} {
			if mode == "upstream-streams" && status != "completed" && status != "incomplete" && status != "failed" {
				continue // no final event: a stream cut short
			}
			stream := mode == "stream"
			t.Run(status+"/"+mode, func(t *testing.T) {
				answer := fmt.Sprintf(`{"id":"resp_1","object":"response","status":%q,"model":"gpt-4o-mini",`+
					`"error":{"code":"server_error","message":"the model fell over"},`+
					`"output":[{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"hi","annotations":[]}]}],`+
					`"usage":{"input_tokens":3,"output_tokens":1,"total_tokens":4}}`, status)
				up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					if mode == "upstream-streams" {
						w.Header().Set("Content-Type", "text/event-stream")
						final := "response." + status
						fmt.Fprintf(w, "event: %s\ndata: {\"type\":%q,\"response\":%s}\n\n", final, final, answer)
						return
					}
					w.Header().Set("Content-Type", "application/json")
					_, _ = w.Write([]byte(answer))
				}))
				st, srv := recordingProxy(t, up)
				body := `{"model":"gpt-4o-mini","input":"hello"}`
				if stream {
					body = streamed(body)
				}
				r, b := post(t, srv.URL+proxy.RouteResponses, body, map[string]string{proxy.HeaderTask: "t"})
				if r.StatusCode != http.StatusOK || !strings.Contains(string(b), status) {
					t.Fatalf("status %d: %s; want 200 with the upstream's response passed on", r.StatusCode, b)
				}
				tr, err := st.Tree(context.Background(), "t")
				if err != nil {
					t.Fatal(err)
				}
				good := status == "completed" || status == "incomplete"
				want := store.StatusFailed
				if good {
					want = store.StatusCompleted
				}
				if got := tr.Executions[0].Execution.Status; got != want || (len(tr.Recordings) == 1) != good {
					t.Fatalf("execution %s with %d recordings; want %s with %d", got, len(tr.Recordings), want, map[bool]int{true: 1}[good])
				}
				if r.Header.Get(proxy.HeaderHash) != "" && !good {
					t.Errorf("a failed answer named recording %q", r.Header.Get(proxy.HeaderHash))
				}
				up.Close()
				replay := serve(t, proxy.Config{Store: st, Replay: true})
				r, b = post(t, replay.URL+proxy.RouteResponses, body, nil)
				if (r.StatusCode == http.StatusOK) != good {
					t.Errorf("replay: %d %s; want it answered only from a finished response", r.StatusCode, b)
				}
			})
		}
	}
}

// TestResponsesStatusNpm: the official openai client sees a failed
// Responses answer as the upstream sent it (whole, its status failed;
// streamed, ending in response.failed), and nothing of it is recorded.
func TestResponsesStatusNpm(t *testing.T) {
	dir := npmClient(t)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"resp_1","object":"response","status":"failed","model":"gpt-4o-mini",` +
			`"error":{"code":"server_error","message":"the model fell over"},"output":[],"usage":{"input_tokens":3,"output_tokens":0,"total_tokens":3}}`))
	}))
	t.Cleanup(up.Close)
	ps := streamProviders(t, block("default", "openai", up.URL+"/v1"))
	st := openStore(t, t.TempDir())
	srv := serve(t, proxy.Config{Store: st, Providers: ps.Providers, Prices: ps.Prices, Upstreams: ps.ups, Secrets: ps.secrets})
	for mode, want := range map[string]string{"whole": `{"status":"failed","error":"the model fell over"}`, "stream": `{"status":"failed","last":"response.failed"}`} {
		if got := strings.TrimSpace(string(runScript(t, dir, "responses-status.mjs", srv.URL+"/v1", mode))); got != want {
			t.Errorf("%s: the client saw %s, want %s", mode, got, want)
		}
		tr, err := st.Tree(context.Background(), "npm-"+mode)
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.Recordings) != 0 || tr.Executions[0].Execution.Status != store.StatusFailed {
			t.Errorf("%s: %d recordings, execution %s; want none and failed", mode, len(tr.Recordings), tr.Executions[0].Execution.Status)
		}
	}
}

// TestResponsesStatusOldRecording: a store written by a proxy that
// recorded a whole Responses answer whose status is failed, cancelled,
// queued or in_progress as a good answer (its recording written here
// through the store API as that proxy wrote it) replays as a store
// written now does: a miss, asked for whole or as a stream, never the
// unfinished answer; a completed one still replays.
func TestResponsesStatusOldRecording(t *testing.T) {
	const answer = `{"id":"resp_1","object":"response","status":"completed","model":"gpt-4o-mini",` +
		`"output":[{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"hi","annotations":[]}]}],` +
		`"usage":{"input_tokens":3,"output_tokens":1,"total_tokens":4}}`
	for _, status := range []string{"completed", "failed", "cancelled", "queued", "in_progress"} {
		t.Run(status, func(t *testing.T) {
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(answer))
			}))
			st, srv := recordingProxy(t, up)
			body := `{"model":"gpt-4o-mini","input":"hello"}`
			r, b := post(t, srv.URL+proxy.RouteResponses, body, map[string]string{proxy.HeaderTask: "t"})
			if r.StatusCode != http.StatusOK {
				t.Fatalf("record: %d %s", r.StatusCode, b)
			}
			// The old proxy's recording: the same envelope, the answer's
			// status the upstream's.
			ctx := context.Background()
			rec, err := st.Recording(ctx, r.Header.Get(proxy.HeaderHash))
			if err != nil {
				t.Fatal(err)
			}
			var env map[string]any
			if err := json.Unmarshal(rec.Response, &env); err != nil {
				t.Fatal(err)
			}
			env["body"] = strings.Replace(env["body"].(string), `"status":"completed","model"`, `"status":"`+status+`","model"`, 1)
			if rec.Response, err = json.Marshal(env); err != nil {
				t.Fatal(err)
			}
			if err := st.PutRecording(ctx, rec); err != nil {
				t.Fatal(err)
			}
			up.Close()
			replay := serve(t, proxy.Config{Store: st, Replay: true})
			for _, b := range []string{body, streamed(body)} {
				r, got := post(t, replay.URL+proxy.RouteResponses, b, nil)
				if status == "completed" {
					if r.StatusCode != http.StatusOK || !strings.Contains(string(got), "hi") {
						t.Errorf("replay of %s: %d %s; want the recorded answer", b, r.StatusCode, got)
					}
					continue
				}
				if r.StatusCode != http.StatusNotFound || !strings.Contains(string(got), "recording_not_found") || !strings.Contains(string(got), "not replayed") || strings.Contains(string(got), `"output"`) {
					t.Errorf("replay of %s: %d %s; want a miss that says why", b, r.StatusCode, got)
				}
			}
		})
	}
}

// recordingProxy is a live proxy recording to a new store, its default
// block the OpenAI upstream up (closed when the test ends).
func recordingProxy(t *testing.T, up *httptest.Server) (*store.Store, *httptest.Server) {
	t.Cleanup(up.Close)
	ps := streamProviders(t, block("default", "openai", up.URL+"/v1"))
	st := openStore(t, t.TempDir())
	return st, serve(t, proxy.Config{Store: st, Providers: ps.Providers, Prices: ps.Prices, Upstreams: ps.ups, Secrets: ps.secrets})
}
