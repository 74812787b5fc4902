//go:build !linux

package wasm

import "time"

// threadCPU is unknown here: the cpu-µs/op metric reads 0.
func threadCPU() time.Duration { return 0 }
