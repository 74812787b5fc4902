package serve

import "net/http"

// route is one API operation: what the mux serves and what the OpenAPI
// document says, from one declaration.
type route struct {
	Method, Path string
	ID, Summary  string
	Query        []param
	// Body and Response name schemas of the OpenAPI document ("" for
	// none); Status is the success status.
	Body, Response string
	// BodyType is the body's media type; "" means application/json.
	BodyType string
	Status   int
	handle   handlerFunc
}

// param is a query parameter.
type param struct {
	Name, Type, Doc string
}

func (s *Server) apiRoutes() []route {
	return []route{
		{Method: "GET", Path: "/api/v1/openapi.json", ID: "openapi", Summary: "This OpenAPI 3 document", Response: "Object", Status: 200, handle: s.openAPI},
		{Method: "GET", Path: "/api/v1/pipelines", ID: "listPipelines", Summary: "The pipelines the server may run (--pipelines)", Response: "PipelineList", Status: 200, handle: s.listPipelines},
		{Method: "GET", Path: "/api/v1/pipelines/{name}/live", ID: "getLive", Summary: "The pipeline's live strategy version (what its runs use), the configured one and every move", Response: "Live", Status: 200, handle: s.getLive},
		{Method: "POST", Path: "/api/v1/pipelines/{name}/promote", ID: "promoteLive", Summary: "Make a recorded version live; 400 for an unknown version, 409 when expect is not the live version", Body: "LiveMove", Response: "Live", Status: 200, handle: s.promoteLive},
		{Method: "POST", Path: "/api/v1/pipelines/{name}/rollback", ID: "rollbackLive", Summary: "Make an earlier version live (without version: the one live before); 400 for an unknown version, 409 when expect is not the live version", Body: "LiveMove", Response: "Live", Status: 200, handle: s.rollbackLive},
		{Method: "GET", Path: "/api/v1/tasks", ID: "listTasks", Summary: "Tasks, newest first, filtered and paged by cursor",
			Query: []param{
				{"pipeline", "string", "pipeline name"},
				{"status", "string", "running, waiting, completed, failed, cancelled, incident or interrupted"},
				{"tag", "string", "a task tag"},
				{"reward_tag", "string", "a tag of one of the task's rewards"},
				{"since", "string", "created at or after (RFC 3339)"},
				{"until", "string", "created at or before (RFC 3339)"},
				{"min_reward", "number", "mean reward at least, -1 to 1 (tasks without rewards are left out)"},
				{"max_reward", "number", "mean reward at most, -1 to 1 (tasks without rewards are left out)"},
				{"limit", "integer", "page size, 1 to 500 (default 50)"},
				{"cursor", "string", "next_cursor of the previous page"},
			}, Response: "TaskPage", Status: 200, handle: s.listTasks},
		{Method: "GET", Path: "/api/v1/tasks/{id}", ID: "getTask", Summary: "A task with its executions (span trees), rewards and recordings (prompts and responses)", Response: "TaskDetail", Status: 200, handle: s.getTask},
		{Method: "POST", Path: "/api/v1/runs", ID: "startRun", Summary: "Start a run of a pipeline; with wait=false answer 202 at once", Body: "RunRequest", Response: "RunResult", Status: 200, handle: s.startRun},
		{Method: "POST", Path: "/api/v1/tasks/{id}/resume", ID: "resumeTask", Summary: "Continue a task: answer its waiting human step, fire due timers, or resume it after a crash", Body: "ResumeRequest", Response: "RunResult", Status: 200, handle: s.resumeTask},
		{Method: "POST", Path: "/api/v1/tasks/{id}/cancel", ID: "cancelTask", Summary: "Cancel a task: its run in progress ends (steps in flight are abandoned), or a task no process runs ends at once; 409 when it has ended", Body: "CancelRequest", Response: "RunResult", Status: 200, handle: s.cancelTask},
		{Method: "POST", Path: "/api/v1/tasks/{id}/retry", ID: "retryTask", Summary: "Continue a task stopped in an incident from the element that stopped it, after assigning vars; 409 when it is in no incident", Body: "VarsRequest", Response: "RunResult", Status: 200, handle: s.retryTask},
		{Method: "POST", Path: "/api/v1/tasks/{id}/vars", ID: "setVars", Summary: "Assign variables of a waiting task or one in an incident, recorded for replay; 409 in any other status", Body: "VarsRequest", Response: "RunResult", Status: 200, handle: s.setVars},
		{Method: "POST", Path: "/api/v1/tasks/{id}/messages", ID: "sendMessage", Summary: "Deliver a message to a waiting task, or to its run in progress", Body: "MessageRequest", Response: "RunResult", Status: 200, handle: s.sendMessage},
		{Method: "POST", Path: "/api/v1/signals", ID: "broadcastSignal", Summary: "Broadcast a signal to every waiting task that waits for it", Body: "SignalRequest", Response: "SignalResult", Status: 200, handle: s.broadcastSignal},
		{Method: "POST", Path: "/api/v1/tasks/{id}/rewards", ID: "addReward", Summary: "Add a reward (feedback) to a task or one of its spans", Body: "RewardRequest", Response: "Reward", Status: http.StatusCreated, handle: s.addReward},
		{Method: "POST", Path: "/api/v1/import", ID: "importTasks", Summary: "Read a JSONL export (sextant export) into the store, all or nothing: a bad line is a 400 naming it, and nothing is written",
			Query: []param{{"name", "string", "the file name errors are positioned in (default body)"}},
			Body:  "Export", BodyType: ImportType, Response: "Imported", Status: http.StatusCreated, handle: s.importTasks},
		{Method: "GET", Path: "/api/v1/recordings/{hash}", ID: "getRecording", Summary: "One recording: a provider call or a human answer", Response: "Recording", Status: 200, handle: s.getRecording},
		{Method: "GET", Path: "/api/v1/strategies", ID: "listStrategies", Summary: "Strategies with promoted versions", Response: "StrategyList", Status: 200, handle: s.listStrategies},
		{Method: "GET", Path: "/api/v1/strategies/{name}", ID: "getStrategy", Summary: "A strategy's versions, oldest first, each with its parent (the lineage)", Response: "StrategyLog", Status: 200, handle: s.getStrategy},
		{Method: "GET", Path: "/api/v1/strategies/{name}/versions/{version}", ID: "getStrategyVersion", Summary: "One version: its record, evidence and file", Response: "StrategyVersion", Status: 200, handle: s.getStrategyVersion},
		{Method: "GET", Path: "/api/v1/strategies/{name}/diff", ID: "diffStrategy", Summary: "What changed between two versions",
			Query: []param{{"from", "string", "base version (required)"}, {"to", "string", "new version (required)"}}, Response: "StrategyDiff", Status: 200, handle: s.diffStrategy},
		{Method: "GET", Path: "/api/v1/comparisons", ID: "listComparisons", Summary: "Judged replays (gate, replay --strategy, merge, evolve), newest first",
			Query: []param{{"pipeline", "string", "pipeline name"}}, Response: "VerdictList", Status: 200, handle: s.listComparisons},
		{Method: "GET", Path: "/api/v1/comparisons/{id}", ID: "getComparison", Summary: "One judged replay with per-task baseline-vs-candidate outcomes and the flipped tasks' outputs", Response: "Verdict", Status: 200, handle: s.getComparison},
		{Method: "POST", Path: "/api/v1/comparisons", ID: "saveComparison", Summary: "Store a judged replay (how the CLI records one while the server holds the store)", Body: "Verdict", Response: "Verdict", Status: http.StatusCreated, handle: s.saveComparison},
		{Method: "GET", Path: "/api/v1/reviews", ID: "listReviews", Summary: "The review queue, oldest first",
			Query: []param{{"status", "string", "pending (default), approved, rejected, superseded or all"}}, Response: "ReviewList", Status: 200, handle: s.listReviews},
		{Method: "GET", Path: "/api/v1/reviews/{id}", ID: "getReview", Summary: "One review request: the candidate, its evidence and verdicts", Response: "Review", Status: 200, handle: s.getReview},
		{Method: "POST", Path: "/api/v1/reviews/{id}/approve", ID: "approveReview", Summary: "Approve a candidate: promote it beside its pipeline's strategy and make it live; 409 when its parent is no longer live", Body: "Decision", Response: "Review", Status: 200, handle: s.approveReview},
		{Method: "POST", Path: "/api/v1/reviews/{id}/reject", ID: "rejectReview", Summary: "Reject a candidate", Body: "Decision", Response: "Review", Status: 200, handle: s.rejectReview},
		{Method: "GET", Path: "/api/v1/metrics", ID: "metrics", Summary: "Success, reward, tokens, cost and latency per day, pipeline and strategy version",
			Query:    []param{{"pipeline", "string", "pipeline name"}, {"since", "string", "created at or after (RFC 3339)"}, {"limit", "integer", "at most this many recent tasks (default 2000, max 20000)"}},
			Response: "MetricList", Status: 200, handle: s.metrics},
	}
}
