package sse

import "fmt"

// ChatEnd is what a chat-completions stream held when it ended cleanly
// (not inside an event, no failed read) without data: [DONE]. Some
// OpenAI-compatible servers (versions of vLLM, llama.cpp's server,
// Ollama, LiteLLM) end a finished stream so, and a close cannot be told
// from a cut; Missing says whether the stream is complete all the same
// (see RATIONALE.md, "Why a chat stream without [DONE] is accepted only
// when it finished").
type ChatEnd struct {
	// Choices is how many choices the stream carried, Finished how many
	// of them had a finish_reason.
	Choices, Finished int
	// Asked is how many choices the request asked for (n; 1 when unset).
	Asked int
	// AskedUsage is whether the request set
	// stream_options.include_usage, Usage whether the usage chunk came.
	AskedUsage, Usage bool
}

// Missing says what the stream lacks to be complete, or "" when it has
// it: a finish_reason for each choice asked for, and the usage chunk
// when asked for.
func (e ChatEnd) Missing() string {
	switch {
	case e.Finished == 0:
		return "its final event (data: [DONE], or a chunk with a finish_reason)"
	case e.Finished < e.Choices || e.Finished < e.Asked:
		return fmt.Sprintf("a finish_reason for each of its choices (%d of %d finished, and no data: [DONE])", e.Finished, max(e.Choices, e.Asked))
	case e.AskedUsage && !e.Usage:
		return "the usage chunk stream_options.include_usage asks for (and no data: [DONE])"
	}
	return ""
}
