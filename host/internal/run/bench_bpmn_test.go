package run_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
	_ "github.com/sextant-dev/sextant/navigators/bpmn"
)

// bpmnBenchStrategy is the strategy every bpmn-* benchmark pipeline uses.
const bpmnBenchStrategy = `[metadata]
name = "bench"
version = "1.0.0"
created_at = 2026-01-01T00:00:00Z

[parameters]
user_confirmation = 0.5

[evolution]
max_parameter_delta = 0.1
branch_type = "experimental"
`

// bpmnBenchAmounts rotate over the instances so that every branch of the
// exclusive process runs; bpmnBenchBranch is the first task each takes.
var (
	bpmnBenchAmounts = []int{50, 500, 5000}
	bpmnBenchBranch  = map[int]string{50: "small1", 500: "mid1", 5000: "big1"}
	serviceTaskID    = regexp.MustCompile(`<bpmn:serviceTask id="([^"]+)"`)
)

// benchmarkBPMN is BenchmarkRun/bpmn-NAME: what `sextant run` does for a
// BPMN routine of 10 service tasks (navigators/bpmn/testdata/bench, the
// processes of the side-by-side comparison with lib-bpmn-engine), one
// instance at a time: Runner.Start over a Badger store, every task an expr
// step, a checkpoint and its spans committed after every step (not
// fsynced, the default). It reports instances per CPU-second of the whole
// process (GC included), the figure the durable row is held to.
func benchmarkBPMN(b *testing.B, name string) {
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "navigators", "bpmn", "testdata", "bench", name+".bpmn"))
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	tasks := writeBPMNPipeline(b, dir, name, string(data))
	prep := prepare(b, filepath.Join(dir, "pipeline.toml"))
	// The CLI's default ([store] fsync = false): committed, not fsynced.
	st, err := store.Open(ctx, filepath.Join(dir, ".sextant"), store.NewConfig().WithSyncCheckpoints(false).WithLogger(quietLogger()))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	r := prep.Runner(run.Config{Store: st, Logger: quietLogger()})
	exclusive := name == "exclusive"
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		amount := bpmnBenchAmounts[i%len(bpmnBenchAmounts)]
		res, err := r.Start(ctx, run.Input{Input: map[string]any{"amount": amount}})
		if err != nil || res.Status != store.StatusCompleted || res.Steps != 10 {
			b.Fatalf("instance %d: %v %+v", i, err, res)
		}
		// Each step's output is stored under its node: the instance ran
		// ten of the process's tasks, and the exclusive one the branch
		// its amount selects.
		ran := 0
		for _, t := range tasks {
			if _, ok := res.Output[t]; ok {
				ran++
			}
		}
		if _, ok := res.Output[bpmnBenchBranch[amount]]; ran != 10 || (exclusive && !ok) {
			b.Fatalf("instance %d (amount %d): %d task outputs, branch %s ran: %t", i, amount, ran, bpmnBenchBranch[amount], ok)
		}
	}
	// Measured through to the data in Badger: the journal's applier
	// (host/internal/store) finishes inside the timed loop.
	if err := st.Sync(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if cpu >= 0 {
		b.ReportMetric(float64(b.N)/(cpuTime()-cpu).Seconds(), "instances/cpu-s")
	}
}

// writeBPMNPipeline writes the pipeline for the BPMN process doc into dir
// and returns its service task ids. Every task is an expr step. Runs start
// with empty variables (the input is separate), so for the exclusive
// process, whose conditions read amount, t1's step lifts input.amount and
// a zeebe:ioMapping output on t1 makes it the variable amount.
func writeBPMNPipeline(b testing.TB, dir, name, doc string) []string {
	b.Helper()
	var tasks []string
	for _, m := range serviceTaskID.FindAllStringSubmatch(doc, -1) {
		tasks = append(tasks, m[1])
	}
	var steps strings.Builder
	for _, t := range tasks {
		if name == "exclusive" && t == "t1" {
			def := `<zeebe:taskDefinition type="t1" />`
			if !strings.Contains(doc, def) {
				b.Fatalf("%s: no t1 task definition to attach the ioMapping to", name)
			}
			doc = strings.Replace(doc, def, def+`<zeebe:ioMapping><zeebe:output source="=amount" target="amount" /></zeebe:ioMapping>`, 1)
			fmt.Fprintf(&steps, "[steps.%s]\nkind = \"expr\"\nset = { amount = \"input.amount\" }\n", t)
			continue
		}
		fmt.Fprintf(&steps, "[steps.%s]\nkind = \"expr\"\nset = { done = \"true\" }\n", t)
	}
	pipe := fmt.Sprintf("name = \"bench-%s\"\n\n[routine]\nnavigator = \"bpmn\"\nfile = \"routine.bpmn\"\n\n[strategy]\nfile = \"strategy.toml\"\n\n%s\n[limits]\nmax_steps = 100\n", name, steps.String())
	for f, s := range map[string]string{"routine.bpmn": doc, "strategy.toml": bpmnBenchStrategy, "pipeline.toml": pipe} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(s), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return tasks
}
