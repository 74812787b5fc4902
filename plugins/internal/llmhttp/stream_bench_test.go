//go:build unix

package llmhttp_test

import (
	"bytes"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/plugins/internal/llmhttp"
)

// BenchmarkSSE reads a 200-chunk chat stream (LF framing) event by event
// as a provider's ChatStream does.
func BenchmarkSSE(b *testing.B) {
	var s bytes.Buffer
	for i := range 200 {
		fmt.Fprintf(&s, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tok%d \"},\"finish_reason\":null}]}\n\n", i)
	}
	s.WriteString("data: [DONE]\n\n")
	stream := s.Bytes()
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		events := llmhttp.NewSSE(bytes.NewReader(stream), "bench")
		for {
			_, _, err := events.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		if events.Count() != 201 {
			b.Fatalf("%d events", events.Count())
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's user+system CPU time, reported per operation
// beside wall time: on a shared machine wall time mostly measures the
// neighbours.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
