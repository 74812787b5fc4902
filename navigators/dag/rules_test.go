package dag

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// An upstream kind says how one upstream task of the task under test ends.
const (
	S  = "success"         // the step succeeds
	F  = "failed"          // the step fails
	K  = "skipped"         // the step reports skipped
	KW = "when-skipped"    // its when condition is false, so it never runs
	UF = "upstream_failed" // its own upstream fails
	SS = "setup-success"   // a setup task that succeeds
	SF = "setup-failed"    // a setup task that fails
	SK = "setup-skipped"   // a setup task that is skipped
)

// ruleCase runs: upstreams u0…un (kinds above) → target (the rule under
// test) → after (all_success), and checks the final states of target and
// after. after shows how the target's state propagates.
type ruleCase struct {
	ups    []string
	target string // final state of target
	after  string // final state of after
}

func ruleDAG(rule string, ups []string) string {
	var b strings.Builder
	b.WriteString("name = \"rules\"\n\n[tasks.root]\n\n")
	var names []string
	for k, u := range ups {
		name := fmt.Sprintf("u%d", k)
		names = append(names, fmt.Sprintf("%q", name))
		fmt.Fprintf(&b, "[tasks.%s]\n", name)
		switch u {
		case UF:
			b.WriteString("depends_on = [\"root\"]\n")
		case KW:
			b.WriteString("when = \"false\"\n")
		case SS, SF, SK:
			b.WriteString("setup = true\n")
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "[tasks.target]\ndepends_on = [%s]\ntrigger_rule = %q\n\n", strings.Join(names, ", "), rule)
	b.WriteString("[tasks.after]\ndepends_on = [\"target\"]\n")
	return b.String()
}

func ruleOutcomes(ups []string) outcomeFunc {
	plan := map[string][]sdk.Status{}
	for k, u := range ups {
		name := fmt.Sprintf("u%d", k)
		switch u {
		case F, SF:
			plan[name] = []sdk.Status{sdk.Failed}
		case K, SK:
			plan[name] = []sdk.Status{sdk.Skipped}
		case UF:
			plan["root"] = []sdk.Status{sdk.Failed}
		}
	}
	return script(plan)
}

func testRule(t *testing.T, rule string, cases []ruleCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(strings.Join(c.ups, "+"), func(t *testing.T) {
			for _, wire := range []bool{false, true} {
				w := newWalker(t, ruleDAG(rule, c.ups), sdk.Env{}, ruleOutcomes(c.ups))
				w.useWire(wire)
				w.run()
				st := w.states()
				if st["target"] != c.target || st["after"] != c.after {
					t.Errorf("wire=%v: target %s, after %s; want %s, %s\nlog:\n%s", wire, st["target"], st["after"], c.target, c.after, strings.Join(w.log, "\n"))
				}
				ran := false
				for _, l := range w.log {
					if l == "enter:target" {
						ran = true
					}
				}
				if ran != (c.target == S) {
					t.Errorf("wire=%v: target ran = %v, but its state is %s", wire, ran, st["target"])
				}
			}
		})
	}
}

// stepRule starts the rule DAG and completes the upstreams one by one in
// the given order, returning the target's state after each completion.
func stepRule(t *testing.T, rule string, ups []string) []string {
	t.Helper()
	w := newWalker(t, ruleDAG(rule, ups), sdk.Env{}, ruleOutcomes(ups))
	w.start()
	var seen []string
	for k := range ups {
		node := fmt.Sprintf("u%d", k)
		for _, tok := range w.ready() {
			if tok.Node == node {
				w.complete(tok.ID, w.outcome(tok))
			}
		}
		s := w.states()["target"]
		if s == "" {
			s = "none"
		}
		seen = append(seen, s)
	}
	return seen
}

func TestTriggerRuleAllSuccess(t *testing.T) {
	testRule(t, "all_success", []ruleCase{
		{[]string{S, S}, S, S},
		{[]string{S, F}, UF, UF},
		{[]string{S, UF}, UF, UF},
		{[]string{S, K}, K, K},
		{[]string{S, KW}, K, K},
		{[]string{F, K}, UF, UF}, // the first finished upstream decides:
		{[]string{K, F}, K, K},   // Airflow does not wait for the others
	})
	// Skip propagation is immediate: target is skipped as soon as one
	// upstream skips, before the other upstreams are done.
	if got := stepRule(t, "all_success", []string{K, S}); strings.Join(got, ",") != "skipped,skipped" {
		t.Errorf("target after each upstream: %v", got)
	}
}

func TestTriggerRuleAllFailed(t *testing.T) {
	testRule(t, "all_failed", []ruleCase{
		{[]string{F, F}, S, S},
		{[]string{F, UF}, S, S},
		{[]string{UF, UF}, S, S},
		{[]string{F, S}, K, K},
		{[]string{F, K}, K, K},
		{[]string{KW, F}, K, K},
	})
}

func TestTriggerRuleAllDone(t *testing.T) {
	testRule(t, "all_done", []ruleCase{
		{[]string{S, S}, S, S},
		{[]string{S, F}, S, S},
		{[]string{K, UF}, S, S},
		{[]string{KW, KW}, S, S},
		{[]string{F, F}, S, S},
	})
	if got := stepRule(t, "all_done", []string{F, S}); strings.Join(got, ",") != "none,running" {
		t.Errorf("target after each upstream: %v", got)
	}
}

func TestTriggerRuleAllDoneSetupSuccess(t *testing.T) {
	testRule(t, "all_done_setup_success", []ruleCase{
		{[]string{S, F}, S, S},       // no setup upstream: as all_done
		{[]string{SS, F}, S, S},      // the setup succeeded
		{[]string{SF, S}, UF, UF},    // no setup succeeded
		{[]string{SK, S}, K, K},      // every setup skipped
		{[]string{SS, SF, K}, S, UF}, // one setup succeeded is enough; but for after, the
		// failed setup is an indirect upstream setup, which must succeed
		{[]string{SK, SF, S}, UF, K}, // not all setups skipped, none succeeded; after is
		// skipped by its indirect setup u0 as soon as u0 skips
	})
}

func TestTriggerRuleAllDoneMinOneSuccess(t *testing.T) {
	testRule(t, "all_done_min_one_success", []ruleCase{
		{[]string{S, S}, S, S},
		{[]string{S, F}, S, S},
		{[]string{S, UF}, S, S},
		{[]string{F, F}, UF, UF},
		{[]string{F, UF}, UF, UF},
		{[]string{S, K}, K, K}, // a skipped upstream skips it
		{[]string{S, KW}, K, K},
	})
	if got := stepRule(t, "all_done_min_one_success", []string{S, F}); strings.Join(got, ",") != "none,running" {
		t.Errorf("target after each upstream: %v", got)
	}
}

func TestTriggerRuleAllSkipped(t *testing.T) {
	testRule(t, "all_skipped", []ruleCase{
		{[]string{K, K}, S, S},
		{[]string{K, KW}, S, S},
		{[]string{K, S}, K, K},
		{[]string{K, F}, K, K},
		{[]string{K, UF}, K, K},
	})
	// Skipped as soon as one upstream succeeds.
	if got := stepRule(t, "all_skipped", []string{S, K}); strings.Join(got, ",") != "skipped,skipped" {
		t.Errorf("target after each upstream: %v", got)
	}
}

func TestTriggerRuleOneFailed(t *testing.T) {
	testRule(t, "one_failed", []ruleCase{
		{[]string{F, S}, S, S},
		{[]string{S, UF}, S, S},
		{[]string{S, S}, K, K},
		{[]string{S, K}, K, K},
		{[]string{KW, KW}, K, K},
	})
	// Fires on the first failure without waiting for the others.
	if got := stepRule(t, "one_failed", []string{F, S}); strings.Join(got, ",") != "running,running" {
		t.Errorf("target after each upstream: %v", got)
	}
}

func TestTriggerRuleOneSuccess(t *testing.T) {
	testRule(t, "one_success", []ruleCase{
		{[]string{S, F}, S, S},
		{[]string{K, S}, S, S},
		{[]string{F, F}, UF, UF},
		{[]string{K, F}, UF, UF},
		{[]string{K, KW}, K, K}, // all skipped: skipped, not upstream_failed
	})
	// Fires on the first success without waiting for the others.
	if got := stepRule(t, "one_success", []string{S, F}); strings.Join(got, ",") != "running,running" {
		t.Errorf("target after each upstream: %v", got)
	}
}

func TestTriggerRuleOneDone(t *testing.T) {
	testRule(t, "one_done", []ruleCase{
		{[]string{S, K}, S, S},
		{[]string{F, K}, S, S},
		{[]string{K, K}, K, K},
		{[]string{K, UF}, K, K}, // upstream_failed is not "done" for one_done
		{[]string{UF, UF}, K, K},
	})
	if got := stepRule(t, "one_done", []string{F, S}); strings.Join(got, ",") != "running,running" {
		t.Errorf("target after each upstream: %v", got)
	}
}

func TestTriggerRuleNoneFailed(t *testing.T) {
	testRule(t, "none_failed", []ruleCase{
		{[]string{S, S}, S, S},
		{[]string{S, K}, S, S},
		{[]string{K, KW}, S, S}, // all skipped still runs
		{[]string{S, F}, UF, UF},
		{[]string{K, UF}, UF, UF},
	})
}

func TestTriggerRuleNoneFailedMinOneSuccess(t *testing.T) {
	testRule(t, "none_failed_min_one_success", []ruleCase{
		{[]string{S, S}, S, S},
		{[]string{S, K}, S, S},
		{[]string{K, KW}, K, K},
		{[]string{S, F}, UF, UF},
		{[]string{K, UF}, UF, UF},
	})
}

func TestTriggerRuleNoneSkipped(t *testing.T) {
	testRule(t, "none_skipped", []ruleCase{
		{[]string{S, S}, S, S},
		{[]string{S, F}, S, S},
		{[]string{F, UF}, S, S},
		{[]string{S, K}, K, K},
		{[]string{KW, F}, K, K},
	})
}

func TestTriggerRuleAlways(t *testing.T) {
	testRule(t, "always", []ruleCase{
		{[]string{S, S}, S, S},
		{[]string{F, F}, S, S},
		{[]string{K, UF}, S, S},
	})
	// always ignores its upstreams entirely: it runs at the start, beside them.
	w := newWalker(t, ruleDAG("always", []string{S}), sdk.Env{}, ok)
	w.start()
	var nodes []string
	for _, tok := range w.ready() {
		nodes = append(nodes, tok.Node)
	}
	if got := strings.Join(nodes, ","); got != "root,u0,target" {
		t.Errorf("ready at start: %s", got)
	}
}

// TestSkipPropagation follows a skip down a chain of default tasks until a
// none_failed task stops it, as a branch join in Airflow.
func TestSkipPropagation(t *testing.T) {
	src := `name = "prop"
[tasks.a]
when = "false"
[tasks.b]
depends_on = ["a"]
[tasks.c]
depends_on = ["b"]
[tasks.join]
depends_on = ["c"]
trigger_rule = "none_failed"
[tasks.d]
depends_on = ["join"]
`
	w := newWalker(t, src, sdk.Env{}, ok)
	w.run()
	got := w.states()
	want := map[string]string{"a": K, "b": K, "c": K, "join": S, "d": S}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s, want %s", k, got[k], v)
		}
	}
	if log := strings.Join(w.log, " "); log != "enter:join exit:join enter:d exit:d complete" {
		t.Errorf("log: %s", log)
	}
}

// TestSetupConstraint: a setup task that is an indirect upstream must
// succeed; its failure makes even an all_done task upstream_failed.
func TestSetupConstraint(t *testing.T) {
	src := `name = "setup"
[tasks.db]
setup = true
[tasks.work]
depends_on = ["db"]
[tasks.report]
depends_on = ["work"]
trigger_rule = "all_done"
`
	for _, c := range []struct {
		db     sdk.Status
		report string
	}{
		{sdk.OK, S},
		{sdk.Failed, UF},
		{sdk.Skipped, K},
	} {
		w := newWalker(t, src, sdk.Env{}, script(map[string][]sdk.Status{"db": {c.db}}))
		w.run()
		if got := w.states()["report"]; got != c.report {
			t.Errorf("db %s: report %s, want %s", c.db, got, c.report)
		}
	}
}

func TestEvaluateTable(t *testing.T) {
	// A direct check of the counting rules that the DAG tests cannot reach:
	// nothing done yet means wait for every rule but always.
	for r := range ruleNames {
		v := evaluate(rule(r), counts{upstream: 2})
		want := wait
		if rule(r) == always {
			want = run
		}
		if v != want {
			t.Errorf("%s with nothing done: %d, want %d", rule(r), v, want)
		}
	}
}
