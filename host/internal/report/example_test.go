package report_test

import (
	"fmt"
	"os"

	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/sdk"
)

func ExampleWriteText() {
	r := &report.Report{
		Pipeline:  "support-triage",
		Baseline:  report.Strategy{Name: "triage", Version: "1.2.0", Hash: "9f2c1a0b7e3d5c4b"},
		Candidate: report.Strategy{Name: "triage", Version: "1.3.0", Hash: "1a0b2c3d4e5f6071"},
		Tasks:     40,
		Fidelity:  1,
		Metrics: []sdk.Metric{{Name: "success", Kind: "binary", Baseline: 0.8, Candidate: 0.85,
			Effect: 0.05, CILow: -0.02, CIHigh: 0.12, P: 0.25, N: 40, HigherIsBetter: true}},
		Gates:    []report.GateResult{{Name: "no-regression", Ruling: sdk.Pass, Reasons: []string{"no drop beyond -2.0pp"}}},
		Ruling:   sdk.Pass,
		ExitCode: 0,
	}
	report.WriteText(os.Stdout, r)
	// Output:
	// pipeline   support-triage
	// baseline   triage 1.2.0 (9f2c1a0b7e3d)
	// candidate  triage 1.3.0 (1a0b2c3d4e5f)
	// tasks      40 replayed, fidelity 100.0%
	//
	// METRIC   KIND    BASELINE  CANDIDATE  EFFECT  CI                     P   N
	// success  binary     80.0%      85.0%  +5.0pp  [-2.0pp, +12.0pp]  0.250  40
	//
	// GATE           RULING  REASON
	// no-regression  pass    no drop beyond -2.0pp
	//
	// verdict: pass (exit 0): 1 of 1 gate passed
}

func ExampleParseSpec() {
	for _, spec := range []string{"junit=out/report.xml", "jsn=r.json"} {
		format, path, err := report.ParseSpec(spec)
		if err != nil {
			fmt.Println(err)
			continue
		}
		write, _ := report.Lookup(format) // ParseSpec checked the format
		fmt.Println(format, path, write != nil)
	}
	// Output:
	// junit out/report.xml true
	// report "jsn=r.json": unknown report format "jsn" (did you mean "json"?); known formats: html, json, junit, md, text
}
