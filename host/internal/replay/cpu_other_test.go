//go:build !unix

package replay_test

import "time"

func cpuTime() time.Duration { return -1 }
