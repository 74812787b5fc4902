// Package temporal runs sextant pipelines on Temporal, an existing
// durable-execution engine, so that runs outlive processes and machines:
// one generic workflow drives any pipeline's routine, its steps run as
// activities on whichever worker takes them, human steps and BPMN
// messages and signals arrive as workflow updates, and BPMN timers are
// Temporal's durable timers.
//
// The workflow never calls a navigator or a step itself. Navigator calls
// (run.Stepper.Begin and Advance) run in local activities, whose results
// Temporal records in the workflow's history: a replayed workflow reads
// them back instead of calling a wasm or process navigator again, so the
// workflow code stays deterministic whatever the navigator's transport.
// Steps (run.Stepper.RunStep) are ordinary activities: retried on another
// worker when theirs dies, answering LLM calls from recordings first.
//
// Results land in a sextant store through a Sink: recordings as soon as a
// provider answers, the run's task, execution and spans once it ended.
//
// This package and the CLI's worker are the only importers of Temporal's
// SDK; nothing else in sextant links it.
package temporal
