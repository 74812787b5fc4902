package proxy

import (
	"encoding/json"
	"net/http"
)

// sse writes a server-sent event stream. Write errors end nothing: a
// client that hung up has had its call recorded already.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

// data writes one event holding v as JSON.
func (s *sse) data(v any) { s.event("", v) }

// event writes one event named name (none when "") holding v as JSON.
func (s *sse) event(name string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	if name != "" {
		_, _ = s.w.Write([]byte("event: " + name + "\n"))
	}
	s.raw(string(b))
}

// raw writes one data line as is.
func (s *sse) raw(data string) {
	_, _ = s.w.Write([]byte("data: " + data + "\n\n"))
	if s.f != nil {
		s.f.Flush()
	}
}
