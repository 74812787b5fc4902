package dag

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/sdktest"
)

// outcomeFunc chooses how a Ready token's step ends.
type outcomeFunc func(tok sdk.Token) sdk.Outcome

// walker drives one instance as the host does: it applies every Decision
// with Decision.Apply and completes Ready tokens, first in state order, with
// the outcome the test chooses. After useWire every call goes through the
// wire encoding (sdktest.Wire), as over the wasm and process transports,
// with the routine loaded through it as the host loads it: the client then
// sends only the variables the routine reads (sdk.Routine.Reads).
type walker struct {
	tb      testing.TB
	src     string
	impl    *Navigator
	nav     sdk.Navigator
	hash    string
	st      sdk.State
	log     []string
	last    *sdk.Decision
	calls   int
	outcome outcomeFunc
}

func newWalker(tb testing.TB, src string, env sdk.Env, outcome outcomeFunc) *walker {
	tb.Helper()
	nav := New()
	r, err := nav.Load(context.Background(), &sdk.LoadRequest{Name: "dag.toml", Routine: []byte(src)})
	if err != nil {
		tb.Fatalf("load: %v", err)
	}
	return &walker{tb: tb, src: src, impl: nav, nav: nav, hash: r.Hash, st: sdk.State{Routine: r.Hash, Env: env}, outcome: outcome}
}

// useWire sends every later call through the wire encoding.
func (w *walker) useWire(on bool) {
	if on {
		c := sdktest.Wire(w.impl)
		if _, err := c.Load(context.Background(), &sdk.LoadRequest{Name: "dag.toml", Routine: []byte(w.src)}); err != nil {
			w.tb.Fatalf("load over the wire: %v", err)
		}
		w.nav = c
	}
}

func (w *walker) apply(d *sdk.Decision, err error) {
	w.tb.Helper()
	if err != nil {
		w.tb.Fatalf("call %d: %v", w.calls, err)
	}
	w.calls++
	w.last = d
	for _, e := range d.Trace {
		w.log = append(w.log, string(e.Type)+":"+e.Node)
	}
	w.st = d.Apply(w.st)
	if d.Fault != nil {
		w.log = append(w.log, fmt.Sprintf("fault: %s [%s] %s", d.Fault.Node, d.Fault.Code, d.Fault.Message))
	}
	if d.Complete {
		w.log = append(w.log, "complete")
	}
}

func (w *walker) state() sdk.State { return w.st }

func (w *walker) start() {
	w.tb.Helper()
	w.apply(w.nav.Start(context.Background(), &sdk.StartRequest{State: w.state()}))
}

// complete finishes the Ready token with id.
func (w *walker) complete(id string, out sdk.Outcome) {
	w.tb.Helper()
	var tok sdk.Token
	for _, t := range w.st.Tokens {
		if t.ID == id {
			tok = t
		}
	}
	if out.Status == sdk.OK && out.Output == nil {
		out.Output = w.outputs(tok)
	}
	if out.Status == sdk.Failed {
		w.log = append(w.log, fmt.Sprintf("fail:%s%s attempt=%d", tok.Node, itemSuffix(tok), tok.Attempt))
	}
	w.apply(w.nav.Next(context.Background(), &sdk.NextRequest{State: w.state(), Token: id, Outcome: out}))
	for _, t := range w.last.Add {
		if t.ID == id && t.Status == sdk.Ready {
			w.log = append(w.log, fmt.Sprintf("retry:%s attempt=%d delay=%dms", t.Node, t.Attempt, t.DelayMS))
		}
	}
}

// outputs makes up a successful step's output as a host would: a value for
// each declared output, naming the output and the instance's item; with
// none declared, the item of a for_each instance.
func (w *walker) outputs(tok sdk.Token) map[string]any {
	io, err := w.nav.IO(context.Background(), &sdk.IORequest{Routine: w.hash, Node: tok.Node})
	if err != nil {
		w.tb.Fatalf("IO: %v", err)
	}
	item, isItem := tok.Attrs[attrItem]
	if len(io.Outputs) == 0 {
		if isItem {
			return map[string]any{"item": item}
		}
		return nil
	}
	out := map[string]any{}
	for _, name := range io.Outputs {
		if isItem {
			out[name] = fmt.Sprintf("%s of %v", name, item)
		} else {
			out[name] = name
		}
	}
	return out
}

func itemSuffix(t sdk.Token) string {
	if i, ok := t.Attrs[attrIndex]; ok {
		return fmt.Sprintf("[%v]", i)
	}
	return ""
}

// ready returns the Ready tokens in state order.
func (w *walker) ready() []sdk.Token {
	var out []sdk.Token
	for _, t := range w.st.Tokens {
		if t.Status == sdk.Ready {
			out = append(out, t)
		}
	}
	return out
}

// run walks to the end.
func (w *walker) run() {
	w.tb.Helper()
	w.start()
	for !w.last.Complete && w.last.Fault == nil {
		r := w.ready()
		if len(r) == 0 {
			w.tb.Fatalf("no Ready token and no end; log:\n%s", strings.Join(w.log, "\n"))
		}
		if w.calls > 10000 {
			w.tb.Fatalf("runaway walk")
		}
		w.complete(r[0].ID, w.outcome(r[0]))
	}
	if len(w.st.Tokens) > 0 && w.last.Complete {
		w.tb.Fatalf("complete with tokens left: %+v", w.st.Tokens)
	}
}

// states returns the task states recorded in State.Data.
func (w *walker) states() map[string]string {
	out := map[string]string{}
	tasks, _ := w.st.Data[dataTasks].(map[string]any)
	for k, v := range tasks {
		out[k], _ = v.(string)
	}
	return out
}

// summary renders the walk for golden files: the log, then the final task
// states and variables.
func (w *walker) summary() string {
	var b strings.Builder
	for _, l := range w.log {
		b.WriteString(l + "\n")
	}
	st := w.states()
	ids := make([]string, 0, len(st))
	for id := range st {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	b.WriteString("--- states\n")
	for _, id := range ids {
		fmt.Fprintf(&b, "%s: %s\n", id, st[id])
	}
	if len(w.st.Env.Vars) > 0 {
		b.WriteString("--- vars\n")
		keys := make([]string, 0, len(w.st.Env.Vars))
		for k := range w.st.Env.Vars {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v, _ := json.Marshal(w.st.Env.Vars[k])
			fmt.Fprintf(&b, "%s = %s\n", k, v)
		}
	}
	return b.String()
}

// ok completes every step successfully.
func ok(sdk.Token) sdk.Outcome { return sdk.Outcome{Status: sdk.OK} }

// script completes steps by node: the listed statuses are used in turn for
// a node's attempts; unlisted nodes succeed.
func script(plan map[string][]sdk.Status) outcomeFunc {
	used := map[string]int{}
	return func(tok sdk.Token) sdk.Outcome {
		key := tok.Node + itemSuffix(tok)
		list, found := plan[key]
		if !found {
			list = plan[tok.Node]
		}
		out := ok(tok)
		if n := used[key]; n < len(list) {
			out.Status = list[n]
		}
		used[key]++
		return out
	}
}
