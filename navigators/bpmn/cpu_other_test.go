//go:build !unix

package bpmn

import "time"

func cpuTime() time.Duration { return -1 }
