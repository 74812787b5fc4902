package dag

// rule is an Airflow trigger rule.
type rule uint8

// The 13 trigger rules, with Airflow's names.
const (
	allSuccess rule = iota
	allFailed
	allDone
	allDoneSetupSuccess
	allDoneMinOneSuccess
	allSkipped
	oneFailed
	oneSuccess
	oneDone
	noneFailed
	noneFailedMinOneSuccess
	noneSkipped
	always
)

var ruleNames = [...]string{
	allSuccess:              "all_success",
	allFailed:               "all_failed",
	allDone:                 "all_done",
	allDoneSetupSuccess:     "all_done_setup_success",
	allDoneMinOneSuccess:    "all_done_min_one_success",
	allSkipped:              "all_skipped",
	oneFailed:               "one_failed",
	oneSuccess:              "one_success",
	oneDone:                 "one_done",
	noneFailed:              "none_failed",
	noneFailedMinOneSuccess: "none_failed_min_one_success",
	noneSkipped:             "none_skipped",
	always:                  "always",
}

func (r rule) String() string { return ruleNames[r] }

func parseRule(s string) (rule, bool) {
	for r, name := range ruleNames {
		if name == s {
			return rule(r), true
		}
	}
	return 0, false
}

// counts are the states of a task's upstream task instances, as Airflow's
// _UpstreamTIStates: an unexpanded for_each task counts as one instance, an
// expanded one as one per element. The setup counts are included in the
// others.
type counts struct {
	upstream       int
	success        int
	skipped        int
	failed         int
	upstreamFailed int
	done           int
	setups         int // upstream instances of setup tasks
	successSetup   int
	skippedSetup   int
}

func (c *counts) add(s state, setup bool) {
	c.upstream++
	if setup {
		c.setups++
	}
	switch s {
	case success:
		c.success++
		if setup {
			c.successSetup++
		}
	case skipped:
		c.skipped++
		if setup {
			c.skippedSetup++
		}
	case failed:
		c.failed++
	case upstreamFailed:
		c.upstreamFailed++
	default:
		return
	}
	c.done++
}

// verdict is what the trigger rule makes of a task now.
type verdict uint8

const (
	wait verdict = iota
	run
	skip
	upFail
)

// evaluate applies rule r to the direct upstream counts c, following
// Airflow's TriggerRuleDep._evaluate_direct_relatives: first the state
// changes that flag_upstream_failed makes (skip and upstream_failed
// propagation), then the condition for the task to run.
func evaluate(r rule, c counts) verdict {
	done := c.done >= c.upstream
	switch r {
	case allSuccess:
		if c.upstreamFailed > 0 || c.failed > 0 {
			return upFail
		}
		if c.skipped > 0 {
			return skip
		}
	case allFailed:
		if c.success > 0 || c.skipped > 0 {
			return skip
		}
	case oneSuccess:
		if done && c.done == c.skipped {
			return skip
		}
		if done && c.success <= 0 {
			return upFail
		}
	case oneFailed:
		if done && c.failed == 0 && c.upstreamFailed == 0 {
			return skip
		}
	case oneDone:
		if done && c.failed == 0 && c.success == 0 {
			return skip
		}
	case noneFailed:
		if c.upstreamFailed > 0 || c.failed > 0 {
			return upFail
		}
	case noneFailedMinOneSuccess:
		if c.upstreamFailed > 0 || c.failed > 0 {
			return upFail
		}
		if c.skipped == c.upstream {
			return skip
		}
	case noneSkipped:
		if c.skipped > 0 {
			return skip
		}
	case allSkipped:
		if c.success > 0 || c.failed > 0 || c.upstreamFailed > 0 {
			return skip
		}
	case allDoneMinOneSuccess:
		// Skipped upstreams do not count as done for this rule.
		if c.skipped > 0 {
			return skip
		}
		if c.success+c.failed+c.upstreamFailed >= c.upstream-c.skipped && c.success == 0 {
			return upFail
		}
	case allDoneSetupSuccess:
		if done && c.setups > 0 && c.skippedSetup >= c.setups {
			return skip
		}
		if done && c.setups > 0 && c.successSetup == 0 {
			return upFail
		}
	}
	pass := false
	switch r {
	case oneSuccess:
		pass = c.success > 0
	case oneFailed:
		pass = c.failed > 0 || c.upstreamFailed > 0
	case oneDone:
		pass = c.success+c.failed > 0
	case allSuccess:
		pass = c.upstream-c.success <= 0
	case allFailed:
		pass = c.upstream-c.failed-c.upstreamFailed <= 0
	case allDone:
		pass = done
	case noneFailed, noneFailedMinOneSuccess:
		pass = c.upstream-c.success-c.skipped <= 0
	case noneSkipped:
		pass = done && c.skipped == 0
	case allSkipped:
		pass = c.upstream-c.skipped <= 0
	case allDoneSetupSuccess:
		pass = done && (c.setups == 0 || c.successSetup > 0)
	case allDoneMinOneSuccess:
		pass = c.skipped == 0 && c.success+c.failed+c.upstreamFailed >= c.upstream && c.success > 0
	case always:
		pass = true
	}
	if pass {
		return run
	}
	return wait
}

// evaluateSetups applies Airflow's _evaluate_setup_constraint to the
// indirect upstream setup instances c: any failure marks the task
// upstream_failed, any skip skips it, and it may not run before all of them
// succeeded (hold).
func evaluateSetups(c counts) (v verdict, hold bool) {
	switch {
	case c.upstreamFailed > 0 || c.failed > 0:
		return upFail, false
	case c.skipped > 0:
		return skip, false
	}
	return wait, c.upstream-c.success > 0
}
