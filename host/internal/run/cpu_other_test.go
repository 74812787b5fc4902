//go:build !unix

package run_test

import "time"

func cpuTime() time.Duration { return -1 }
