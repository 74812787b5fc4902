//go:build unix

package sse_test

import (
	"bytes"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/sdk/sse"
)

// chatStream is a 200-chunk chat stream framed with eol.
func chatStream(eol string) []byte {
	var s bytes.Buffer
	for i := range 200 {
		fmt.Fprintf(&s, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tok%d \"},\"finish_reason\":null}]}%s%s", i, eol, eol)
	}
	fmt.Fprintf(&s, "data: [DONE]%s%s", eol, eol)
	return s.Bytes()
}

// BenchmarkReader reads a 200-chunk chat stream event by event and
// parses each, framed with LF and with lone CRs.
func BenchmarkReader(b *testing.B) {
	for _, f := range []struct{ name, eol string }{{"lf", "\n"}, {"cr", "\r"}} {
		b.Run(f.name, func(b *testing.B) {
			stream := chatStream(f.eol)
			b.SetBytes(int64(len(stream)))
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				sr := sse.NewReader(bytes.NewReader(stream))
				for {
					raw, err := sr.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					if sr.Event(raw).Data == nil {
						b.Fatal("no data")
					}
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
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
