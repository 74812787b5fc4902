package serve

import (
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The OpenAPI document is built from the route table (routes.go) that
// also registers the routes, so the two cannot drift; TestOpenAPIRoutes
// checks the served document against the mux anyway.

var pathParam = regexp.MustCompile(`\{([a-z_]+)\}`)

type obj = map[string]any

func str(doc string) obj  { return obj{"type": "string", "description": doc} }
func num(doc string) obj  { return obj{"type": "number", "description": doc} }
func intg(doc string) obj { return obj{"type": "integer", "description": doc} }
func ref(name string) obj { return obj{"$ref": "#/components/schemas/" + name} }
func arr(items obj) obj   { return obj{"type": "array", "items": items} }
func object(props obj, required ...string) obj {
	o := obj{"type": "object", "properties": props}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

// schemas are the components of the document: request bodies exactly
// (unknown fields are refused), answers by their main fields.
func schemas() obj {
	anyObj := obj{"type": "object", "additionalProperties": true}
	strs := arr(obj{"type": "string"})
	return obj{
		"Object":       anyObj,
		"Error":        object(obj{"error": object(obj{"code": str("bad_request, unauthorized, forbidden, not_found, conflict, too_large, unsupported_media_type, unavailable or internal"), "message": str("what went wrong")}, "code", "message")}, "error"),
		"PipelineList": object(obj{"pipelines": arr(object(obj{"name": str("pipeline name"), "file": str("pipeline file")}))}),
		"Task": object(obj{"id": str("task id"), "pipeline": str(""), "status": str("running, waiting, completed, failed, cancelled, incident or interrupted"), "created": str("RFC 3339"), "tags": strs, "input": anyObj, "truth": obj{}, "strategy": anyObj, "waits": arr(anyObj),
			"owner": obj{"type": "object", "description": "the lease (pid, host, started) of the process running it"}, "incident": obj{"type": "object", "description": "where (node, position) and why (kind, error) it stopped"}, "cancelled": obj{"type": "object", "description": "who cancelled it (by), why (reason) and when (at)"}, "rewards": intg("number of rewards"), "mean_reward": num("mean of the rewards, absent without any"),
			"workers": str("serve --temporal: \"none answering\" for a run going on that no worker answered for; its status is then the cluster's record (running) and its status now unknown")}),
		"TaskPage": object(obj{"tasks": arr(ref("Task")), "next_cursor": str("pass as cursor for the next page; absent on the last (serve --temporal: the runs going on on the cluster come first, then the stored tasks)")}, "tasks"),
		"TaskDetail": object(obj{"task": ref("Task"), "executions": arr(object(obj{"execution": anyObj, "spans": arr(anyObj), "checkpoint": anyObj})),
			"rewards": arr(ref("Reward")), "recordings": strs, "calls": arr(ref("Recording")),
			"workers": str("serve --temporal: \"none answering\" for a run going on that no worker answered for; the task is then the cluster's record, with no execution")}, "task", "executions", "calls"),
		"Recording":     object(obj{"hash": str(""), "kind": str("chat or human"), "provider": str(""), "request": anyObj, "response": obj{}, "usage": anyObj, "latency_ns": intg(""), "task": str(""), "created": str("")}),
		"Reward":        object(obj{"task": str(""), "seq": intg(""), "execution": str(""), "span_id": str(""), "value": num(""), "tags": strs, "note": str(""), "created": str("")}),
		"RewardRequest": object(obj{"value": num("from -1 (bad) to 1 (good)"), "span_id": str("16 hex digits: a span of the task"), "execution": str("an execution of the task"), "tags": strs, "note": str("at most 4096 bytes")}, "value"),
		"RunRequest": object(obj{"pipeline": str("a name from GET /api/v1/pipelines"), "id": str("task id (default: generated)"), "input": anyObj, "truth": obj{"description": "ground truth, any JSON"},
			"tags": strs, "wait": obj{"type": "boolean", "description": "false: answer 202 {task} at once (default true)"},
			"file": str("the pipeline file the client means; refused when the server's pipeline of that name is another")}, "pipeline"),
		"RunResult":      object(obj{"task": str(""), "execution": str(""), "status": str(""), "error": str(""), "waiting": arr(anyObj), "waits": arr(anyObj), "output": anyObj, "steps": intg(""), "tokens": intg(""), "cost_usd": num("")}, "task", "status"),
		"CancelRequest":  object(obj{"by": str("who cancels, user@host (default api@CLIENT-ADDRESS)"), "reason": str("why")}),
		"VarsRequest":    object(obj{"vars": obj{"type": "object", "additionalProperties": true, "description": "variables to assign"}}),
		"ResumeRequest":  object(obj{"answers": obj{"type": "object", "additionalProperties": true, "description": "the answers a waiting human step asks for (answer, confirm, …)"}}),
		"MessageRequest": object(obj{"name": str("message name, or the id of the event that waits for it"), "key": str("correlation key: only a subscription with this key receives it"), "vars": anyObj}, "name"),
		"SignalRequest":  object(obj{"name": str("signal name"), "pipeline": str("only tasks of this pipeline"), "vars": anyObj}, "name"),
		"SignalResult":   object(obj{"signal": str(""), "received": intg(""), "tasks": arr(ref("RunResult"))}),
		"StrategyList":   object(obj{"strategies": arr(object(obj{"name": str(""), "versions": intg(""), "latest": str("")}))}),
		"StrategyLog":    object(obj{"name": str(""), "versions": arr(object(obj{"name": str(""), "version": str(""), "parent": str("parent version"), "hash": str(""), "author": str(""), "created": str(""), "evidence": anyObj}))}),
		"StrategyVersion": object(obj{"name": str(""), "version": str(""), "parent": str(""), "hash": str(""), "evidence": anyObj,
			"file": str("the strategy file, when found beside a served pipeline"), "text": str("its content")}),
		"StrategyDiff": object(obj{"name": str(""), "from": str(""), "to": str(""), "diff": anyObj, "text": str("as sextant strategy diff prints it")}),
		"ToolCall": object(obj{"source": str("the tool source; absent for a tool the step does not offer"), "tool": str(""), "arguments": str("canonical JSON (keys sorted), redacted"),
			"decision": str("executed, recorded, refused, blocked, declined or failed"), "result": str("what the model was told, when the call succeeded"), "error": str("what the model was told otherwise")}, "tool", "arguments", "decision"),
		"Verdict": object(obj{"id": str(""), "command": str("replay, gate, merge or evolve"), "pipeline": str(""), "created": str(""),
			"comparison": object(obj{"baseline": anyObj, "candidate": anyObj, "diff": anyObj, "metrics": arr(anyObj), "fidelity": num("")}),
			"tasks": arr(object(obj{"task": str(""), "baseline": anyObj, "candidate": anyObj, "flip": str("regressed, improved or absent"), "baseline_output": obj{}, "candidate_output": obj{}, "baseline_tool_calls": arr(ref("ToolCall")), "candidate_tool_calls": arr(ref("ToolCall")),
				"baseline_run": ref("RunFacts"), "candidate_run": ref("RunFacts"), "output_differs": obj{"type": "boolean", "description": "the two replays ended with different outputs"}})),
			"gates": anyObj, "ruling": str("pass, review or fail"), "exit_code": intg(""),
			"forest_svg": str("GET of one comparison: its forest plot, an <svg> element as the HTML report draws it")}, "pipeline", "comparison"),
		"RunFacts":    object(obj{"error": str("why the replay did not complete"), "latency_ms": num("the time its calls took (recorded latencies; measured when live)"), "output": str("digest of its output: equal digests, equal outputs")}),
		"VerdictList": object(obj{"comparisons": arr(ref("Verdict"))}),
		"Review": object(obj{"id": str(""), "pipeline": str(""), "mutator": str(""), "baseline": anyObj, "candidate": str("the candidate strategy file"), "comparison": anyObj, "result": anyObj, "status": str("pending, approved, rejected or superseded"), "by": str(""), "note": str(""), "path": str(""),
			"forest_svg": str("in the list: the comparison's forest plot, an <svg> element as the HTML report draws it")}),
		"ReviewList":  object(obj{"reviews": arr(ref("Review"))}),
		"LiveVersion": object(obj{"name": str("strategy name"), "version": str(""), "hash": str(""), "file": str("relative to the pipeline"), "action": str("configured, promote, rollback, evolve or approve"), "by": str("who moved it"), "reason": str("why"), "at": str("RFC 3339"), "from": str("the version live before")}),
		"Live":        object(obj{"pipeline": str(""), "live": ref("LiveVersion"), "configured": ref("LiveVersion"), "pinned": obj{"type": "boolean", "description": "[strategy] pin: runs use the configured file"}, "runs": ref("LiveVersion"), "history": arr(ref("LiveVersion"))}, "pipeline", "live", "configured", "runs", "history"),
		"LiveMove":    object(obj{"version": str("the version to make live (a rollback without it: the one live before)"), "reason": str("why, at most 4096 bytes"), "by": str("who, user@host (default api@CLIENT-ADDRESS)"), "expect": str("the live version the client saw; another one live now is a 409")}),
		"Export":      obj{"type": "string", "description": "JSONL as sextant export writes it: a header line, then one task, execution, span, reward, checkpoint or recording a line"},
		"Imported":    object(obj{"tasks": intg(""), "executions": intg(""), "spans": intg(""), "rewards": intg(""), "recordings": intg(""), "checkpoints": intg("")}),
		"Decision":    object(obj{"by": str("who decides"), "note": str("why")}, "by"),
		"MetricList": object(obj{"metrics": arr(object(obj{"day": str("YYYY-MM-DD"), "pipeline": str(""), "strategy": str("version"), "tasks": intg(""), "completed": intg(""), "failed": intg(""),
			"success": intg(""), "success_rate": num(""), "rewarded": intg(""), "mean_reward": num(""), "tokens": intg(""), "cost_usd": num(""), "mean_latency_ms": num("")}))}),
	}
}

// document builds the OpenAPI 3 document of the server's routes and its
// extra handlers.
func (s *Server) document() obj {
	paths := obj{}
	op := func(path, method string) obj {
		item, _ := paths[path].(obj)
		if item == nil {
			item = obj{}
			paths[path] = item
		}
		o := obj{}
		item[strings.ToLower(method)] = o
		return o
	}
	errResp := func(doc string) obj {
		return obj{"description": doc, "content": obj{"application/json": obj{"schema": ref("Error")}}}
	}
	for _, rt := range s.routes {
		o := op(rt.Path, rt.Method)
		o["operationId"], o["summary"] = rt.ID, rt.Summary
		var params []obj
		for _, m := range pathParam.FindAllStringSubmatch(rt.Path, -1) {
			params = append(params, obj{"name": m[1], "in": "path", "required": true, "schema": obj{"type": "string"}})
		}
		for _, q := range rt.Query {
			params = append(params, obj{"name": q.Name, "in": "query", "description": q.Doc, "schema": obj{"type": q.Type}})
		}
		if params != nil {
			o["parameters"] = params
		}
		if rt.Body != "" {
			bt := rt.BodyType
			if bt == "" {
				bt = "application/json"
			}
			o["requestBody"] = obj{"required": true, "content": obj{bt: obj{"schema": ref(rt.Body)}}}
		}
		resps := obj{strconv.Itoa(rt.Status): obj{"description": "OK", "content": obj{"application/json": obj{"schema": ref(rt.Response)}}}}
		resps["400"] = errResp("bad input; nothing was written")
		resps["401"] = errResp("missing or wrong bearer token")
		resps["404"] = errResp("not found")
		if rt.Method == http.MethodPost {
			resps["403"] = errResp("a cross-site request")
			resps["409"] = errResp("conflicts with the stored state")
			resps["413"] = errResp("request body too large: past 8 MiB, or holding more JSON values than one per 16 bytes of that, or nested deeper than 128")
			resps["415"] = errResp("the body is not of the media type asked for")
			why := "the server holds as many request bodies decoded as it may at once"
			if s.opts.Cluster != nil {
				why += ", or serve --temporal: no worker polls the task queue of a run this needs to reach"
			}
			unavailable := errResp(why + "; nothing was done")
			unavailable["headers"] = obj{"Retry-After": obj{"description": "seconds after which the request is worth sending again", "schema": obj{"type": "integer"}}}
			resps["503"] = unavailable
		}
		if rt.ID == "startRun" {
			resps["202"] = obj{"description": "started (wait=false)", "content": obj{"application/json": obj{"schema": object(obj{"task": str("")})}}}
			if s.opts.Cluster == nil {
				busy := errResp("wait=false: the server runs --max-runs such runs already, or it holds as many request bodies decoded as it may at once; nothing was started")
				busy["headers"] = obj{"Retry-After": obj{"description": "seconds after which the request is worth sending again", "schema": obj{"type": "integer"}}}
				resps["503"] = busy
			}
		}
		o["responses"] = resps
	}
	extra := make([]string, 0, len(s.opts.Handlers))
	for p := range s.opts.Handlers {
		extra = append(extra, p)
	}
	sort.Strings(extra)
	for _, p := range extra {
		method, path := "post", patternPath(p)
		if m, _, ok := strings.Cut(p, " "); ok && !strings.HasPrefix(m, "/") {
			method = strings.ToLower(m)
		}
		o := op(path, method)
		o["summary"] = "mounted handler (" + p + ")"
		o["responses"] = obj{"default": obj{"description": "see the handler's documentation"}, "401": errResp("missing or wrong bearer token")}
	}
	doc := obj{
		"openapi": "3.0.3",
		"info": obj{"title": "sextant", "version": s.opts.Version,
			"description": "The sextant server's API: tasks, runs, feedback, strategies, comparisons and the review queue. Writes need Content-Type: application/json; with a token set, every request needs Authorization: Bearer TOKEN."},
		"servers":    []obj{{"url": "/"}},
		"paths":      paths,
		"components": obj{"schemas": schemas(), "securitySchemes": obj{"bearer": obj{"type": "http", "scheme": "bearer"}}},
	}
	if s.opts.Token != "" {
		doc["security"] = []obj{{"bearer": []string{}}}
	}
	return doc
}

func (s *Server) openAPI(*http.Request) (int, any, error) { return 200, s.document(), nil }
