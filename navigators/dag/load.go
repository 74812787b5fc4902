package dag

import (
	"fmt"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/sextant-dev/sextant/navigators/internal/reads"
	"github.com/sextant-dev/sextant/navigators/internal/tomldoc"
	"github.com/sextant-dev/sextant/sdk"
)

// The routine schema: every key the loader reads, declared once. Unknown
// keys are reported against these lists.
const (
	keyName          = "name"
	keyDescription   = "description"
	keyTasks         = "tasks"
	keyDependsOn     = "depends_on"
	keyWhen          = "when"
	keyTriggerRule   = "trigger_rule"
	keyRetries       = "retries"
	keyRetryDelay    = "retry_delay"
	keyMaxRetryDelay = "max_retry_delay"
	keyForEach       = "for_each"
	keySetup         = "setup"
	keyInputs        = "inputs"
	keyOutputs       = "outputs"
)

var (
	rootKeys = []string{keyName, keyDescription, keyTasks}
	taskKeys = []string{keyName, keyDescription, keyDependsOn, keyWhen, keyTriggerRule, keyRetries,
		keyRetryDelay, keyMaxRetryDelay, keyForEach, keySetup, keyInputs, keyOutputs}
)

const (
	defaultRetryDelay = time.Second
	// defaultMaxRetryDelay is Airflow's cap on an exponential retry delay.
	defaultMaxRetryDelay = 24 * time.Hour
	maxRetries           = 1000
)

// task is one loaded task.
type task struct {
	id, name string
	line     int
	exprs    []sdk.Expression // when and for_each, for the host's reference check
	depsLine int
	deps     []int // direct upstream tasks, in declaration order
	down     []int // direct downstream tasks, in document order
	setups   []int // indirect upstream setup tasks (not in deps)
	rule     rule
	when     *vm.Program
	forEach  *vm.Program
	retries  int
	delay    time.Duration
	maxDelay time.Duration
	setup    bool
	inputs   []string
	outputs  []string
}

// routine is one loaded DAG. It is immutable once loaded and shared by
// every instance.
type routine struct {
	summary sdk.Routine
	tasks   []*task // document order
	index   map[string]int
	topo    []int // a topological order, document order among peers
	leaf    []bool
}

// exprEnv is the shape of the environment conditions are compiled against.
var exprEnv = map[string]any{"input": map[string]any{}, "vars": map[string]any{}, "strategy": map[string]any{}}

// parse loads and validates a DAG document, reporting every problem.
func parse(file string, src []byte) (*routine, error) {
	doc, root, err := tomldoc.Parse(file, src)
	if err != nil {
		return nil, err
	}
	r := &routine{index: map[string]int{}}
	name, ok := root.String(keyName)
	if !ok && !root.Has(keyName) {
		doc.Add(0, "", "missing required key %q", keyName)
	} else if ok && strings.TrimSpace(name) == "" {
		root.Errorf(keyName, "must not be empty")
	}
	r.summary.ID = name
	root.String(keyDescription)
	tasks, ok := root.Table(keyTasks)
	if !ok && !root.Has(keyTasks) {
		doc.Add(0, "", "no tasks: add a [tasks.ID] table for each task")
	}
	root.Strict(rootKeys)

	// First pass: the tasks and their own keys.
	var deps [][]string
	var depTables []*tomldoc.Table
	if tasks != nil {
		ids := tasks.Keys()
		if len(ids) == 0 {
			tasks.Errorf("", "no tasks: add a [tasks.ID] table for each task")
		}
		for _, id := range ids {
			tt, ok := tasks.Table(id)
			if !ok {
				continue
			}
			t, d := parseTask(id, tt)
			r.index[id] = len(r.tasks)
			r.tasks = append(r.tasks, t)
			deps = append(deps, d)
			depTables = append(depTables, tt)
		}
	}

	// Second pass: resolve depends_on.
	ids := make([]string, len(r.tasks))
	for i, t := range r.tasks {
		ids[i] = t.id
	}
	for i, t := range r.tasks {
		seen := map[int]bool{}
		for n, d := range deps[i] {
			j, ok := r.index[d]
			switch {
			case !ok:
				depTables[i].ErrorfAt(keyDependsOn, n, "unknown task %q%s", d, tomldoc.Suggest(d, ids))
			case seen[j]:
				depTables[i].ErrorfAt(keyDependsOn, n, "task %q listed twice", d)
			default:
				seen[j] = true
				t.deps = append(t.deps, j)
			}
		}
	}
	for i, t := range r.tasks {
		for _, j := range t.deps {
			r.tasks[j].down = append(r.tasks[j].down, i)
		}
	}
	// Unresolved dependencies are left out of the graph, which cannot
	// create a cycle, so cycles are reported beside the other problems.
	for _, c := range findCycles(r.tasks) {
		t := r.tasks[c[0]]
		names := make([]string, len(c))
		for k, j := range c {
			names[k] = r.tasks[j].id
		}
		doc.Add(t.depsLine, "tasks."+t.id, "cycle %s", strings.Join(names, " → "))
	}
	if err := doc.Err(); err != nil {
		return nil, err
	}

	r.topo = topoOrder(r.tasks)
	r.leaf = make([]bool, len(r.tasks))
	for i, t := range r.tasks {
		r.leaf[i] = len(t.down) == 0
		t.setups = indirectSetups(r.tasks, i)
		r.summary.Nodes = append(r.summary.Nodes, sdk.Node{
			ID: t.id, Name: t.name, Kind: "task", Line: t.line, Step: true,
			Inputs: t.inputs, Outputs: t.outputs,
		})
		r.summary.Expressions = append(r.summary.Expressions, t.exprs...)
	}
	// A DAG reads the variables its when and for_each expressions name.
	var rs reads.Set
	for _, e := range r.summary.Expressions {
		rs.Expr(e.Text)
	}
	r.summary.Reads = rs.Reads()
	return r, nil
}

// parseTask reads one [tasks.ID] table; it returns the task and its raw
// depends_on list.
func parseTask(id string, tt *tomldoc.Table) (*task, []string) {
	t := &task{id: id, line: tt.Line(), depsLine: tt.Line(), rule: allSuccess, delay: defaultRetryDelay, maxDelay: defaultMaxRetryDelay}
	t.name, _ = tt.String(keyName)
	tt.String(keyDescription)
	deps, _ := tt.Strings(keyDependsOn)
	if tt.Has(keyDependsOn) {
		t.depsLine = tt.Line(keyDependsOn)
	}
	if s, ok := tt.String(keyTriggerRule); ok {
		r, ok := parseRule(s)
		if !ok {
			tt.Errorf(keyTriggerRule, "unknown trigger rule %q%s", s, tomldoc.Suggest(s, ruleNames[:]))
		}
		t.rule = r
	}
	if s, ok := tt.String(keyWhen); ok {
		t.when = compile(tt, keyWhen, s, expr.AsBool())
		t.exprs = append(t.exprs, sdk.Expression{Element: tt.Element(""), Line: tt.Line(keyWhen), What: keyWhen, Text: s})
	}
	if s, ok := tt.String(keyForEach); ok {
		t.forEach = compile(tt, keyForEach, s)
		t.exprs = append(t.exprs, sdk.Expression{Element: tt.Element(""), Line: tt.Line(keyForEach), What: keyForEach, Text: s})
	}
	if n, ok := tt.Int(keyRetries); ok {
		if n < 0 || n > maxRetries {
			tt.Errorf(keyRetries, "want 0 to %d, got %d", maxRetries, n)
		} else {
			t.retries = int(n)
		}
	}
	if d, ok := tt.Duration(keyRetryDelay); ok {
		t.delay = d
	}
	if d, ok := tt.Duration(keyMaxRetryDelay); ok {
		t.maxDelay = d
	}
	t.setup, _ = tt.Bool(keySetup)
	t.inputs = names(tt, keyInputs)
	t.outputs = names(tt, keyOutputs)
	tt.Strict(taskKeys)
	return t, deps
}

// names reads a list of variable names, which must be unique and not empty.
func names(tt *tomldoc.Table, key string) []string {
	list, _ := tt.Strings(key)
	seen := map[string]bool{}
	var out []string
	for n, s := range list {
		switch {
		case strings.TrimSpace(s) == "":
			tt.ErrorfAt(key, n, "element %d: empty name", n)
		case seen[s]:
			tt.ErrorfAt(key, n, "%q listed twice", s)
		default:
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func compile(tt *tomldoc.Table, key, src string, opts ...expr.Option) *vm.Program {
	p, err := expr.Compile(src, append([]expr.Option{expr.Env(exprEnv)}, opts...)...)
	if err != nil {
		msg, _, _ := strings.Cut(err.Error(), "\n")
		tt.Errorf(key, "expression %q: %s", src, msg)
		return nil
	}
	return p
}

// findCycles returns one cycle per strongly connected component that has
// one, each as a path of task indices that starts and ends at the task
// written last in the file (the one most likely to have closed the cycle),
// following the flow from upstream to downstream.
func findCycles(tasks []*task) [][]int {
	n := len(tasks)
	index := make([]int, n)
	low := make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int
	var sccs [][]int
	next := 0
	// Iterative Tarjan: frames of (node, next edge).
	type frame struct{ v, e int }
	for s := 0; s < n; s++ {
		if index[s] >= 0 {
			continue
		}
		frames := []frame{{s, 0}}
		index[s], low[s] = next, next
		next++
		stack = append(stack, s)
		onStack[s] = true
		for len(frames) > 0 {
			f := &frames[len(frames)-1]
			v := f.v
			if f.e < len(tasks[v].down) {
				w := tasks[v].down[f.e]
				f.e++
				if index[w] < 0 {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					frames = append(frames, frame{w, 0})
				} else if onStack[w] {
					low[v] = min(low[v], index[w])
				}
				continue
			}
			frames = frames[:len(frames)-1]
			if len(frames) > 0 {
				p := frames[len(frames)-1].v
				low[p] = min(low[p], low[v])
			}
			if low[v] == index[v] {
				var scc []int
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					scc = append(scc, w)
					if w == v {
						break
					}
				}
				sccs = append(sccs, scc)
			}
		}
	}
	var cycles [][]int
	for _, scc := range sccs {
		in := map[int]bool{}
		start := scc[0]
		for _, v := range scc {
			in[v] = true
			if tasks[v].line > tasks[start].line || tasks[v].line == tasks[start].line && v > start {
				start = v
			}
		}
		if len(scc) == 1 && !contains(tasks[start].down, start) {
			continue
		}
		cycles = append(cycles, shortestCycle(tasks, start, in))
	}
	// Report in document order of the starting task.
	for i := 1; i < len(cycles); i++ {
		for j := i; j > 0 && tasks[cycles[j][0]].line < tasks[cycles[j-1][0]].line; j-- {
			cycles[j], cycles[j-1] = cycles[j-1], cycles[j]
		}
	}
	return cycles
}

// shortestCycle finds, by breadth-first search inside one component, the
// shortest path from start back to start.
func shortestCycle(tasks []*task, start int, in map[int]bool) []int {
	prev := map[int]int{}
	queue := []int{start}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range tasks[v].down {
			if !in[w] {
				continue
			}
			if w == start {
				path := []int{start}
				for u := v; u != start; u = prev[u] {
					path = append(path, u)
				}
				path = append(path, start)
				// path is start, v, …, start reversed in the middle.
				for i, j := 1, len(path)-2; i < j; i, j = i+1, j-1 {
					path[i], path[j] = path[j], path[i]
				}
				return path
			}
			if _, seen := prev[w]; !seen {
				prev[w] = v
				queue = append(queue, w)
			}
		}
	}
	return []int{start, start}
}

func contains(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// topoOrder orders an acyclic graph, taking tasks in document order when
// several are free.
func topoOrder(tasks []*task) []int {
	indeg := make([]int, len(tasks))
	for _, t := range tasks {
		for _, d := range t.down {
			indeg[d]++
		}
	}
	var order []int
	done := make([]bool, len(tasks))
	for len(order) < len(tasks) {
		progressed := false
		for i := range tasks {
			if done[i] || indeg[i] > 0 {
				continue
			}
			done[i] = true
			progressed = true
			order = append(order, i)
			for _, d := range tasks[i].down {
				indeg[d]--
			}
		}
		if !progressed {
			panic(fmt.Sprintf("dag: topoOrder on a cyclic graph (%d of %d ordered)", len(order), len(tasks)))
		}
	}
	return order
}

// indirectSetups returns the setup tasks among the ancestors of task i that
// are not its direct upstreams, in document order.
func indirectSetups(tasks []*task, i int) []int {
	seen := make([]bool, len(tasks))
	stack := append([]int(nil), tasks[i].deps...)
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[v] {
			continue
		}
		seen[v] = true
		stack = append(stack, tasks[v].deps...)
	}
	var out []int
	for v := range tasks {
		if seen[v] && tasks[v].setup && !contains(tasks[i].deps, v) {
			out = append(out, v)
		}
	}
	return out
}
