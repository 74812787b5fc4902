// Package dag is the DAG navigator: it walks a routine written as a TOML
// graph of tasks with Airflow's dependency semantics. It registers itself as
// the builtin navigator "dag"; navigators/dag/plugin builds the same code as
// a go-plugin binary or a wasip1 module.
//
// A routine looks like this:
//
//	name = "research"                 # required: the routine id
//	description = "…"                 # optional
//
//	[tasks.plan]                      # one table per task; the key is the task id
//	outputs = ["urls"]                # variables the step writes (informative)
//
//	[tasks.fetch]
//	depends_on = ["plan"]             # upstream task ids
//	for_each = "vars.urls"            # fan out: one instance per element, in order
//	retries = 2                       # retries after a failure (default 0)
//	retry_delay = "1s"                # first retry delay, doubled each retry (default 1s)
//	max_retry_delay = "1m"            # cap on the delay (default 24h)
//	inputs = ["urls"]
//
//	[tasks.summarise]
//	depends_on = ["fetch"]
//	when = "len(vars.fetch) > 0"      # expr-lang condition over input, vars, strategy
//	trigger_rule = "none_failed"      # one of the 13 Airflow rules (default all_success)
//
//	[tasks.db]
//	setup = true                      # a setup task, for all_done_setup_success
//
// # Semantics
//
// A task is decided exactly as Airflow's TriggerRuleDep decides a task
// instance, with flag_upstream_failed on: on every call the navigator counts
// the states of each undecided task's direct upstream task instances
// (success, failed, skipped, upstream_failed), marks it skipped or
// upstream_failed when its rule can no longer be met (skip propagation),
// and runs it when its rule is met. A task with no upstream, or with rule
// "always", runs at once. Setup tasks (setup = true) that are indirect
// upstreams of a task must all succeed before it runs; a failed one marks
// it upstream_failed and a skipped one skips it, as in Airflow. Teardown
// tasks are not supported.
//
// When a task is to run, its when condition is evaluated first; false skips
// it. A for_each task then evaluates its expression to a list and starts one
// Ready token per element (Token.Attrs "index" and "item"); an empty list
// skips the task, and a list longer than 1024 (Airflow's max_map_length)
// is a fault. Each instance counts as one upstream task instance for the
// tasks downstream of it, as mapped task instances do in Airflow. When every
// instance has finished, the navigator assigns (Decision.Set) each declared
// output to the list of the instances' values for it, in input order, or,
// with no declared outputs, the task id to the list of the instances'
// outputs. An empty fan-out assigns empty lists.
//
// A step the host reports skipped skips its task (or instance), as
// AirflowSkipException does. A when or for_each expression that fails at
// run time ends the instance with a Fault (code "expression").
//
// A failed step with retries left comes back as the same token, Ready, with
// Attempt+1 and DelayMS = retry_delay × 2^(Attempt), capped by
// max_retry_delay: the navigator has no clock, the host waits.
//
// Every task that becomes ready is returned Ready in the same Decision, so
// the host runs parallel branches concurrently. The instance ends when every
// task is decided and no token is left: with a Fault (code "task_failed")
// when a leaf task failed or is upstream_failed, as an Airflow DAG run
// fails, and with Complete otherwise.
//
// The navigator keeps no run state: task states live in State.Data under
// "tasks" (task id → state), "instances" (for_each task id → instance
// states) and "outputs" (for_each task id → instance outputs); token ids are
// "t" followed by State.Seq. Trace events are emitted when a token arrives
// at a task (enter) and when it leaves it (exit); tasks that are skipped
// without running get no token and so no events.
package dag
