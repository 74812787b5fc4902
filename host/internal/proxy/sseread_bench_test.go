package proxy

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	sseread "github.com/sextant-dev/sextant/sdk/sse"
)

// BenchmarkSSERead reads a 200-chunk chat stream (LF framing) event by
// event and assembles it, as a streamed call's pass-through does.
func BenchmarkSSERead(b *testing.B) {
	var s bytes.Buffer
	for i := range 200 {
		fmt.Fprintf(&s, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tok%d \"},\"finish_reason\":null}]}\n\n", i)
	}
	s.WriteString("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	stream := s.Bytes()
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		sr := sseread.NewReader(bytes.NewReader(stream))
		asm := newAssembler(RouteChatCompletions, nil)
		for {
			raw, err := sr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if err := asm.add(sr.Event(raw)); err != nil {
				b.Fatal(err)
			}
		}
		if asm.missing() != "" {
			b.Fatal("not done")
		}
	}
}
