package openaitest

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"unicode"
)

// Upstream is a deterministic OpenAI-compatible server for end-to-end
// tests: a judge on /chat/completions that rates the last user message by
// the first rule whose text it contains, and /embeddings answering
// bag-of-words vectors (texts sharing words are similar, texts sharing
// none are orthogonal). Every request is logged as "METHOD PATH" lines to
// Log when set.
//
// A judge request with "stream": true is answered as a stream framed as
// Stream says, written a byte at a time.
type Upstream struct {
	// Rules rate a judged text: the first whose Contains the last user
	// message holds gives its Rating; none gives Default.
	Rules   []Rule
	Default int
	Log     io.Writer
	Stream  Framing

	mu sync.Mutex
}

// Rule is one of the judge's ratings.
type Rule struct {
	Contains string
	Rating   int
}

// Framing is how an Upstream frames a streamed answer, as the servers
// it stands for do.
type Framing struct {
	// EOL ends each line: "\n" (the default), "\r\n" or "\r".
	EOL string
	// NoDone leaves out the final data: [DONE], as some vLLM, llama.cpp
	// and Ollama versions do.
	NoDone bool
	// Cut stops the stream inside its last chunk, as a dropped
	// connection does.
	Cut bool
}

// Dims is the length of the Upstream's vectors.
const Dims = 64

// ServeHTTP implements http.Handler.
func (u *Upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if u.Log != nil {
		u.mu.Lock()
		fmt.Fprintf(u.Log, "%s %s\n", r.Method, r.URL.Path)
		u.mu.Unlock()
	}
	body, err := io.ReadAll(r.Body)
	if err != nil || r.Method != http.MethodPost {
		http.Error(w, `{"error":{"message":"bad request","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case strings.HasSuffix(r.URL.Path, "/chat/completions"):
		u.judge(w, body)
	case strings.HasSuffix(r.URL.Path, "/embeddings"):
		u.embeddings(w, body)
	default:
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":{"message":"no such endpoint","type":"invalid_request_error"}}`)
	}
}

func (u *Upstream) judge(w http.ResponseWriter, body []byte) {
	var req struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, apiError("malformed request", "invalid_request_error", nil))
		return
	}
	last := ""
	for _, m := range req.Messages {
		if m.Role == "user" {
			last = m.Content
		}
	}
	rating, why := u.Default, "no rule matched"
	for _, r := range u.Rules {
		if strings.Contains(last, r.Contains) {
			rating, why = r.Rating, fmt.Sprintf("the text holds %q", r.Contains)
			break
		}
	}
	verdict, _ := json.Marshal(map[string]any{"score": rating, "reason": why})
	if !req.Stream {
		io.WriteString(w, completion(string(verdict), "stop", len(strings.Fields(last)), 12))
		return
	}
	u.stream(w, string(verdict), len(strings.Fields(last)), 12)
}

// stream answers content as a chat stream: a chunk with the role, one
// with the content, one with the finish_reason, the usage chunk and
// [DONE], framed as u.Stream says and written a byte at a time.
func (u *Upstream) stream(w http.ResponseWriter, content string, in, out int) {
	eol := u.Stream.EOL
	if eol == "" {
		eol = "\n"
	}
	var b strings.Builder
	for _, c := range []map[string]any{
		{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": ""}, "finish_reason": nil}}},
		{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": content}, "finish_reason": nil}}},
		{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}},
		{"choices": []any{}, "usage": map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}},
	} {
		c["id"], c["object"], c["created"], c["model"] = "chatcmpl-s1", "chat.completion.chunk", 1741569952, "gpt-4o-mini-2024-07-18"
		j, _ := json.Marshal(c)
		b.WriteString("data: " + string(j) + eol + eol)
	}
	body := b.String()
	switch {
	case u.Stream.Cut:
		body = body[:len(body)-20]
	case !u.Stream.NoDone:
		body += "data: [DONE]" + eol + eol
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for i := range len(body) {
		if _, err := io.WriteString(w, body[i:i+1]); err != nil {
			return
		}
		w.(http.Flusher).Flush()
	}
}

func (u *Upstream) embeddings(w http.ResponseWriter, body []byte) {
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if json.Unmarshal(body, &req) != nil || len(req.Input) == 0 {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, apiError("input must be a non-empty array of strings", "invalid_request_error", nil))
		return
	}
	type datum struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	}
	data := make([]datum, len(req.Input))
	tokens := 0
	// Listed last to first: a client must place vectors by index.
	for i, text := range req.Input {
		v, n := BagOfWords(text)
		tokens += n
		data[len(req.Input)-1-i] = datum{Object: "embedding", Index: i, Embedding: v}
	}
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model,
		"usage": map[string]any{"prompt_tokens": tokens, "total_tokens": tokens}})
}

// BagOfWords is the Upstream's vector of text: each lower-cased word
// counted in the dimension its hash picks, normalised to length 1 (zero
// for a text without words); n is the number of words.
func BagOfWords(text string) (v []float64, n int) {
	v = make([]float64, Dims)
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	for _, wd := range words {
		h := fnv.New32a()
		h.Write([]byte(wd))
		v[h.Sum32()%Dims]++
	}
	norm := 0.0
	for _, x := range v {
		norm += x * x
	}
	if norm > 0 {
		norm = math.Sqrt(norm)
		for i := range v {
			v[i] /= norm
		}
	}
	return v, len(words)
}
