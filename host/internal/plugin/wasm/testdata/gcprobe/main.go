// Command gcprobe is a gate that reports how the Go runtime of its
// instance collects garbage (Config["mode"] = "gc": its GOGC and memory
// limit as Reasons) or keeps a live heap while it churns through garbage
// ("churn": Config["live"] and Config["garbage"] MiB), for the tests of
// sextant_memory_limit. Built as a wasip1 module.
package main

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/sextant-dev/sextant/sdk"
)

type probe struct{}

func (probe) Describe() sdk.Info {
	return sdk.Info{Name: "gcprobe", Kind: sdk.KindGate, Version: "0.0.1", API: sdk.APIVersion}
}

var live [][]byte

func (probe) Check(_ context.Context, c *sdk.Comparison) (*sdk.Verdict, error) {
	switch c.Config["mode"] {
	case "gc":
		percent := debug.SetGCPercent(100)
		debug.SetGCPercent(percent)
		limit := debug.SetMemoryLimit(-1)
		return &sdk.Verdict{Ruling: sdk.Pass, Reasons: []string{fmt.Sprintf("gogc=%d", percent), fmt.Sprintf("limit=%d", limit)}}, nil
	case "churn":
		liveMiB, _ := c.Config["live"].(float64)
		garbageMiB, _ := c.Config["garbage"].(float64)
		for len(live) < int(liveMiB)*16 {
			live = append(live, make([]byte, 64<<10))
		}
		var sink []byte
		for range int(garbageMiB) * 16 {
			sink = make([]byte, 64<<10)
			sink[0] = 1
		}
		return &sdk.Verdict{Ruling: sdk.Pass, Reasons: []string{fmt.Sprint(len(live), len(sink))}}, nil
	}
	return nil, sdk.Errorf(sdk.CodeBadRequest, "unknown mode %v", c.Config["mode"])
}

func init() { sdk.Register(probe{}) }

func main() { sdk.Main() }
