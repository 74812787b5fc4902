package run

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sextant-dev/sextant/host/internal/failpoint"
	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/plugin"
	"github.com/sextant-dev/sextant/host/internal/store"
	"github.com/sextant-dev/sextant/host/internal/strategy"
	"github.com/sextant-dev/sextant/host/internal/tool"
	"github.com/sextant-dev/sextant/sdk"
)

// An llm step with tools runs the model ↔ tool loop: call the model with
// the tools it offers; run the calls of the model's answer (at most
// limits.parallel at once); append their results as tool messages; call
// the model again, until it answers without tool calls or max_turns model
// calls are spent.
//
// Every call is answered, in this order, by: a refusal the model is told
// (a tool not offered, bad arguments, never_execute); a person's decision
// when the call needs one (confirm, must_confirm_before,
// prefer_confirm_for); its recording; or, in a live run only, the tool,
// after a started marker is recorded. A replay never executes a tool
// (except under on_miss = "live" for tools whose replay is live). A call
// with a started marker and no recording began before a crash: it runs
// again only if the tool is idempotent, otherwise a person decides.

// toolState is one execution's tool bookkeeping.
type toolState struct {
	mu sync.Mutex
	// seen counts the calls numbered so far per tool and arguments (and
	// all calls under answersToolCalls): what completed steps committed
	// to the run state's Answers, plus the calls of steps in flight.
	seen map[string]int
	// lists are the tools each source listed for this task.
	lists map[string][]sdk.ToolSpec
}

// A completed step adds its calls to the run state's Answers counters
// (checkpointed with it): under occurrenceKey for each tool and arguments,
// and under answersToolCalls for all. A resumed or replayed run numbers its
// calls from there, as the first run did; a step that paused commits
// nothing, so it numbers its calls the same way when it runs again.
const answersToolCalls = "tool calls"

func occurrenceKey(source, name string, canon []byte) string {
	sum := sha256.Sum256([]byte(source + "\x00" + name + "\x00" + string(canon)))
	return "tool " + hex.EncodeToString(sum[:12])
}

// tally is what one step execution's calls add to the run state when the
// step completes: call counts (see answersToolCalls) and violations.
type tally struct {
	counts     map[string]int
	violations int
}

// reserve numbers the next call under key (from 1), counting it in the
// step's own tally too.
func (e *exec) reserve(key string, mine *tally) int {
	e.tools.mu.Lock()
	defer e.tools.mu.Unlock()
	if e.tools.seen == nil {
		e.tools.seen = map[string]int{}
		e.mu.Lock()
		for k, v := range e.st.Answers {
			if strings.HasPrefix(k, "tool ") {
				e.tools.seen[k] = v
			}
		}
		e.mu.Unlock()
	}
	e.tools.seen[key]++
	mine.counts[key]++
	return e.tools.seen[key]
}

// commitCalls adds a finished step's tally to the run state. A step that
// pauses commits nothing: it counts its calls again when it runs again.
func (e *exec) commitCalls(mine *tally) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, v := range mine.counts {
		e.st.answered(k, v)
	}
	e.st.Violations += mine.violations
}

// openTools makes the pipeline's tool sources, none started; tool plugins
// are opened through reg with the pipeline's grant when first used.
func openTools(p *pipeline.Pipeline, reg *plugin.Registry, logger *slog.Logger) *tool.Set {
	if len(p.Tools) == 0 {
		return nil
	}
	return tool.NewSet(p, tool.Options{Logger: logger, OpenPlugin: func(ctx context.Context, name string) (sdk.Tool, func(context.Context) error, error) {
		h, err := reg.OpenKind(ctx, name, sdk.KindTool, grant(p, name))
		if err != nil {
			return nil, nil, err
		}
		t, err := h.Tool()
		if err != nil {
			h.Close(context.WithoutCancel(ctx))
			return nil, nil, err
		}
		return t, h.Close, nil
	}})
}

// startTools starts and lists, before a live run begins, every source its
// llm steps select from: a server that cannot start fails the run before
// anything is written. Replays start nothing.
func (r *Runner) startTools(ctx context.Context) error {
	if r.cfg.Tools == nil || r.cfg.ToolReplay != "" || r.stateless {
		return nil
	}
	used := map[string]bool{}
	for _, st := range r.cfg.Pipeline.Steps {
		for _, sel := range st.Tools {
			if p, err := strategy.ParseToolPattern(sel); err == nil {
				used[p.Source] = true
			}
		}
	}
	names := make([]string, 0, len(used))
	for n := range used {
		names = append(names, n)
	}
	sort.Strings(names)
	return r.cfg.Tools.Start(ctx, names...)
}

// offered is one tool an llm step offers the model.
type offered struct {
	source string
	spec   sdk.ToolSpec
	policy tool.Policy
	schema *tool.Schema
}

// toolList returns the tools source listed for this task: recorded once
// per task, so a resumed run and a replay offer the model what the first
// run offered, and a replay needs no server.
func (e *exec) toolList(ctx context.Context, source string) ([]sdk.ToolSpec, error) {
	e.tools.mu.Lock()
	if l, ok := e.tools.lists[source]; ok {
		e.tools.mu.Unlock()
		return l, nil
	}
	e.tools.mu.Unlock()
	j := e.r.cfg.Journal
	key := store.ToolListKey(e.task.ID, source)
	var specs []sdk.ToolSpec
	rec, err := j.Recording(ctx, key)
	switch {
	case err == nil:
		if err := json.Unmarshal(rec.Response, &specs); err != nil {
			return nil, &fatalError{fmt.Errorf("tools.%s: recorded tool list: %w", source, err)}
		}
	case !errors.Is(err, store.ErrNotFound):
		return nil, &fatalError{err}
	case e.r.cfg.ToolReplay != "" && e.r.cfg.ToolReplay != "live":
		return nil, &fatalError{fmt.Errorf("tools.%s: the task has no recorded tool list (a replay starts no tool source; --on-miss live lists it live)", source)}
	case e.r.cfg.Tools == nil:
		return nil, &fatalError{fmt.Errorf("tools.%s: no tool sources are open", source)}
	default:
		if specs, err = e.r.cfg.Tools.List(ctx, source); err != nil {
			return nil, &fatalError{err}
		}
		rec, err := store.NewToolList(e.task.ID, source, specs)
		if err != nil {
			return nil, &fatalError{err}
		}
		if err := j.PutRecording(ctx, rec); err != nil {
			return nil, &fatalError{err}
		}
	}
	e.tools.mu.Lock()
	if e.tools.lists == nil {
		e.tools.lists = map[string][]sdk.ToolSpec{}
	}
	e.tools.lists[source] = specs
	e.tools.mu.Unlock()
	return specs, nil
}

// offer selects the step's tools: by model-facing name, and in the order
// the model is shown them (the step's selectors in order, each source's
// tools in its order).
func (e *exec) offer(ctx context.Context, spec pipeline.Step) (map[string]*offered, []sdk.ToolSpec, error) {
	byName := map[string]*offered{}
	var list []sdk.ToolSpec
	for i, sel := range spec.Tools {
		pat, err := strategy.ParseToolPattern(sel)
		if err != nil {
			return nil, nil, &fatalError{fmt.Errorf("tools[%d]: %w", i, err)}
		}
		specs, err := e.toolList(ctx, pat.Source)
		if err != nil {
			return nil, nil, err
		}
		cfg, _ := e.r.cfg.Pipeline.Tools[pat.Source]
		matched := 0
		for _, sp := range specs {
			if !pat.MatchTool(pat.Source, sp.Name) {
				continue
			}
			matched++
			if o, dup := byName[sp.Name]; dup {
				if o.source == pat.Source {
					continue
				}
				return nil, nil, &fatalError{fmt.Errorf("tools: %q is a tool of both %s and %s: select one with SOURCE.TOOL", sp.Name, o.source, pat.Source)}
			}
			if !sdk.ValidToolName(sp.Name) {
				return nil, nil, &fatalError{fmt.Errorf("tools.%s: tool %q has a name models refuse (want 1 to 64 letters, digits, _ or -)", pat.Source, sp.Name)}
			}
			byName[sp.Name] = &offered{source: pat.Source, spec: sp, policy: tool.PolicyOf(cfg, sp), schema: tool.Compile(sp.InputSchema)}
			list = append(list, sdk.ToolSpec{Name: sp.Name, Description: sp.Description, InputSchema: sp.InputSchema})
		}
		if matched == 0 {
			names := make([]string, len(specs))
			for i, sp := range specs {
				names[i] = sp.Name
			}
			return nil, nil, &fatalError{fmt.Errorf("tools[%d]: %q selects no tool of %s (it has %s)", i, sel, pat.Source, strings.Join(names, ", "))}
		}
	}
	if c := spec.ToolChoice; c != "" && c != "auto" && c != "none" && c != "required" && byName[c] == nil {
		return nil, nil, &fatalError{fmt.Errorf("tool_choice %q is not one of the step's tools", c)}
	}
	return byName, list, nil
}

// toolLoop runs the model ↔ tool loop from req (which it extends with the
// conversation) and returns the model's last answer, or a question when a
// call waits for a person.
func (e *exec) toolLoop(ctx context.Context, t sdk.Token, spec pipeline.Step, provider string, req *sdk.ChatRequest, res *stepResult, in stepIn) (*sdk.ChatResponse, string, error) {
	byName, list, err := e.offer(ctx, spec)
	if err != nil {
		return nil, "", err
	}
	req.Tools, req.ToolChoice = list, spec.ToolChoice
	mine := &tally{counts: map[string]int{}}
	lc := &loopCall{answers: in.answers}
	maxTurns := spec.MaxTurns
	if maxTurns <= 0 {
		maxTurns = 8
	}
	for turn := 1; ; turn++ {
		resp, err := e.chat(ctx, provider, req, res)
		if err != nil {
			return nil, "", err
		}
		if len(resp.ToolCalls) == 0 {
			e.commitCalls(mine)
			return resp, "", nil
		}
		if turn >= maxTurns {
			e.commitCalls(mine)
			return nil, "", fmt.Errorf("the model still calls tools after max_turns = %d model calls (last: %s)", maxTurns, callNames(resp.ToolCalls))
		}
		calls := append([]sdk.ToolCall(nil), resp.ToolCalls...)
		for i := range calls {
			if calls[i].ID == "" { // a provider that names no ids: stable ones
				calls[i].ID = fmt.Sprintf("call_%d_%d", turn, i+1)
			}
		}
		msgs, wait, err := e.toolTurn(ctx, t, byName, calls, mine, lc)
		if wait != "" || err != nil {
			if err != nil {
				e.commitCalls(mine)
			}
			return nil, wait, err
		}
		res.Spans = append(res.Spans, msgs.spans...)
		req.Messages = append(append(append([]sdk.Message(nil), req.Messages...),
			sdk.Message{Role: "assistant", Content: resp.Text, ToolCalls: calls}), msgs.messages...)
		// A forced choice holds for the first turn only, as agent SDKs
		// reset it: forced again, the model could never answer.
		if req.ToolChoice == "required" || byName[req.ToolChoice] != nil {
			req.ToolChoice = ""
		}
	}
}

// keepToolCalls makes a provider's answer recordable, and the same live
// as read back from its recording: arguments in the form the store keeps
// (compact JSON; none as {}), and arguments that are not JSON (a model can
// write anything) as a JSON string of their text, which the loop then
// refuses, telling the model.
func keepToolCalls(resp *sdk.ChatResponse) {
	for i, c := range resp.ToolCalls {
		switch {
		case len(c.Arguments) == 0:
			resp.ToolCalls[i].Arguments = json.RawMessage(`{}`)
		case !json.Valid(c.Arguments):
			b, _ := json.Marshal(string(c.Arguments))
			resp.ToolCalls[i].Arguments = b
		default:
			resp.ToolCalls[i].Arguments = stored(c.Arguments)
		}
	}
}

// stored is raw as encoding/json writes it (compact, HTML-escaped): the
// form a recording gives back.
func stored(raw json.RawMessage) json.RawMessage {
	b, err := json.Marshal(raw)
	if err != nil {
		return raw
	}
	return b
}

func callNames(calls []sdk.ToolCall) string {
	names := make([]string, len(calls))
	for i, c := range calls {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

// loopCall is what one step execution's loop carries between turns.
type loopCall struct {
	// answers are the resume's answers until a call's question takes them.
	answers map[string]any
}

// turnOut is one turn's tool messages and spans, in the model's order.
type turnOut struct {
	messages []sdk.Message
	spans    []store.Span
}

// callPlan is one tool call of a turn on its way to an answer.
type callPlan struct {
	call    sdk.ToolCall
	off     *offered
	key     string // its recording key; "" for a call refused before numbering
	req     store.ToolRequest
	start   time.Time
	execute bool // the tool must be called
	// The answer, once known.
	result   *sdk.ToolResult
	decision string // executed, recorded, refused, blocked, declined, failed
	errType  string
	recorded bool
	latency  time.Duration
}

func (p *callPlan) answer(decision, errType, content string) {
	p.decision, p.errType = decision, errType
	p.result = &sdk.ToolResult{Content: content, IsError: errType != ""}
}

// toolTurn answers one model turn's calls. Refusals, policy and people's
// decisions and recordings are settled in the model's order first; only
// then do the calls that must run, run (at most limits.parallel at once),
// so that a turn that waits for a person has executed nothing.
func (e *exec) toolTurn(ctx context.Context, t sdk.Token, byName map[string]*offered, calls []sdk.ToolCall, mine *tally, lc *loopCall) (*turnOut, string, error) {
	plans := make([]*callPlan, len(calls))
	for i, c := range calls {
		p := &callPlan{call: c, start: e.r.cfg.Clock()}
		plans[i] = p
		if wait, err := e.plan(ctx, t, byName, p, mine, lc); wait != "" || err != nil {
			return nil, wait, err
		}
	}
	limit := e.r.cfg.Pipeline.Limits.Parallel
	if limit <= 0 {
		limit = 4
	}
	// Workers take the calls in the model's order: with limits.parallel =
	// 1 they run one after the other, as the model wrote them.
	todo := make(chan int)
	errs := make([]error, len(plans))
	var wg sync.WaitGroup
	for range limit {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range todo {
				errs[i] = e.execute(ctx, plans[i])
			}
		}()
	}
	for i, p := range plans {
		if p.execute {
			todo <- i
		}
	}
	close(todo)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, "", err
	}
	out := &turnOut{}
	for _, p := range plans {
		content := p.result.Content
		if content == "" && len(p.result.Structured) > 0 {
			content = string(p.result.Structured)
		}
		out.messages = append(out.messages, sdk.Message{Role: "tool", Content: content, ToolCallID: p.call.ID, IsError: p.result.IsError})
		out.spans = append(out.spans, e.toolSpan(p))
	}
	return out, "", nil
}

// plan settles what answers call p short of running the tool.
func (e *exec) plan(ctx context.Context, t sdk.Token, byName map[string]*offered, p *callPlan, mine *tally, lc *loopCall) (string, error) {
	c := p.call
	off := byName[c.Name]
	if off == nil {
		names := make([]string, 0, len(byName))
		for n := range byName {
			names = append(names, n)
		}
		sort.Strings(names)
		p.answer("refused", "tool_not_offered", fmt.Sprintf("error: there is no tool %q here; the tools are: %s", c.Name, strings.Join(names, ", ")))
		return "", nil
	}
	p.off = off
	canon, err := tool.Canonical(c.Arguments)
	if err != nil {
		p.answer("refused", "invalid_arguments", fmt.Sprintf("error: %s: %v", c.Name, err))
		return "", nil
	}
	if err := off.schema.Check(c.Arguments); err != nil {
		p.answer("refused", "invalid_arguments", fmt.Sprintf("error: %s: %v", c.Name, err))
		return "", nil
	}
	d := e.r.cfg.Strategy.DecideTool(strategy.ToolCall{Source: off.source, Tool: c.Name, Arguments: canon})
	if d.Outcome == strategy.Blocked {
		mine.violations++
		p.answer("blocked", "blocked_by_policy", "error: blocked by policy: "+d.Reason)
		return "", nil
	}
	total := e.reserve(answersToolCalls, mine)
	if max := e.r.cfg.Pipeline.Limits.MaxToolCalls; max > 0 && total > max {
		return "", &fatalError{fmt.Errorf("%w: tool calls: %d > limits.max_tool_calls %d", ErrLimit, total, max)}
	}
	n := e.reserve(occurrenceKey(off.source, c.Name, canon), mine)
	p.req = store.ToolRequest{Source: off.source, Tool: c.Name, Arguments: canon, N: n}
	p.key = store.ToolKey(e.task.ID, off.source, c.Name, canon, n)
	if d.Outcome == strategy.Confirm || off.policy.Confirm {
		why := d.Reason
		if d.Outcome != strategy.Confirm {
			why = fmt.Sprintf("tools.%s: %s is to be confirmed (destructive)", off.source, c.Name)
		}
		q := fmt.Sprintf("run tool call %s.%s(%s)? (%s)", off.source, c.Name, clipArgs(canon), why)
		ok, wait, err := e.decide(ctx, t, store.ToolApprovalKey(p.key, "confirm"), q, lc)
		if wait != "" || err != nil {
			return wait, err
		}
		if !ok {
			p.answer("declined", "declined", "error: a person declined this call; it was not run")
			return "", nil
		}
	}
	j := e.r.cfg.Journal
	rec, err := j.Recording(ctx, p.key)
	switch {
	case err == nil:
		var r sdk.ToolResult
		if err := json.Unmarshal(rec.Response, &r); err != nil {
			return "", &fatalError{fmt.Errorf("tool recording %s: %w", short(p.key), err)}
		}
		p.result, p.decision, p.recorded, p.latency = &r, "recorded", true, rec.Latency
		if r.IsError {
			p.errType = "tool_error"
		}
		return "", nil
	case !errors.Is(err, store.ErrNotFound):
		return "", &fatalError{err}
	}
	if e.r.cfg.ToolReplay != "" {
		if e.r.cfg.ToolReplay == "live" && off.policy.ReplayLive {
			p.execute = true
			return "", nil
		}
		return "", &fatalError{fmt.Errorf("tool call %s.%s(%s) has no recording: a replay never executes tools (with --on-miss live it executes those whose replay is live)", off.source, c.Name, clipArgs(canon))}
	}
	if _, err := j.Recording(ctx, store.ToolStartedKey(p.key)); err == nil {
		// The call began before the process stopped and left no result:
		// it may have taken effect.
		if !off.policy.Idempotent {
			q := fmt.Sprintf("tool call %s.%s(%s) started before the run stopped and has no result; it is not idempotent, so it may have taken effect. Run it again?", off.source, c.Name, clipArgs(canon))
			ok, wait, err := e.decide(ctx, t, store.ToolApprovalKey(p.key, "retry"), q, lc)
			if wait != "" || err != nil {
				return wait, err
			}
			if !ok {
				p.answer("declined", "declined", "error: this call was interrupted before it answered and may or may not have taken effect; a person chose not to run it again")
				return "", nil
			}
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		return "", &fatalError{err}
	}
	p.execute = true
	return "", nil
}

// decide answers a question about a tool call: from its recorded answer,
// else from the resume's answers (recorded then), else by pausing the
// step (a replay, which has no person, leaves the run waiting too).
func (e *exec) decide(ctx context.Context, t sdk.Token, key, question string, lc *loopCall) (bool, string, error) {
	j := e.r.cfg.Journal
	rec, err := j.Recording(ctx, key)
	switch {
	case err == nil:
		var a map[string]any
		if err := json.Unmarshal(rec.Response, &a); err != nil {
			return false, "", &fatalError{fmt.Errorf("recorded answer %s: %w", short(key), err)}
		}
		if e.r.cfg.ToolReplay != "" {
			// The live run counted the question when it paused for it.
			e.mu.Lock()
			e.st.Confirmations++
			e.mu.Unlock()
		}
		return approved(a), "", nil
	case !errors.Is(err, store.ErrNotFound):
		return false, "", &fatalError{err}
	}
	if lc.answers != nil && e.r.cfg.ToolReplay == "" {
		a := lc.answers
		lc.answers = nil // one answer, one question
		b, err := json.Marshal(a)
		if err != nil {
			return false, "", &fatalError{err}
		}
		rec, err := store.NewHumanRecording(e.task.ID, t.Node, 0, question, b)
		if err != nil {
			return false, "", &fatalError{err}
		}
		rec.Hash = key
		if err := j.PutRecording(ctx, rec); err != nil {
			return false, "", &fatalError{err}
		}
		return approved(a), "", nil
	}
	e.mu.Lock()
	e.st.Confirmations++
	e.mu.Unlock()
	return false, question + " — resume with --set approve=yes|no", nil
}

// execute runs a planned call: in a live run a started marker is recorded
// first, and the result (a failure too) after, so a resumed run answers it
// from the record rather than run it twice.
func (e *exec) execute(ctx context.Context, p *callPlan) error {
	j := e.r.cfg.Journal
	live := e.r.cfg.ToolReplay == ""
	if live {
		m, err := store.NewToolStarted(p.key, e.task.ID, p.req)
		if err != nil {
			return &fatalError{err}
		}
		if err := j.PutRecording(ctx, m); err != nil {
			return &fatalError{err}
		}
		failpoint.Hit(failpoint.ToolStarted)
	}
	if e.r.cfg.Tools == nil {
		return &fatalError{fmt.Errorf("tools.%s: no tool sources are open", p.off.source)}
	}
	t0 := e.r.cfg.Clock()
	r, err := e.r.cfg.Tools.Call(ctx, p.off.source, p.call.Name, p.call.Arguments)
	p.latency = e.r.cfg.Clock().Sub(t0)
	switch {
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		// Told to the model, and recorded: the call was made and failed.
		et := "tool_error"
		if errors.Is(err, tool.ErrTooLarge) {
			et = "result_too_large"
		}
		p.answer("failed", et, "error: the call failed: "+err.Error())
	default:
		if len(r.Structured) > 0 {
			r.Structured = stored(r.Structured)
		}
		p.result, p.decision = r, "executed"
		if r.IsError {
			p.errType = "tool_error"
		}
	}
	rec, err := store.NewToolRecording(p.key, e.task.ID, p.req, p.result, p.latency)
	if err != nil {
		return &fatalError{err}
	}
	if err := j.PutRecording(ctx, rec); err != nil {
		return &fatalError{err}
	}
	failpoint.Hit(failpoint.ToolRecorded)
	return nil
}

// The GenAI semantic conventions' tool attributes.
const (
	AttrGenAIToolName          = "gen_ai.tool.name"
	AttrGenAIToolCallID        = "gen_ai.tool.call.id"
	AttrGenAIToolType          = "gen_ai.tool.type"
	AttrGenAIToolCallArguments = "gen_ai.tool.call.arguments"
	AttrGenAIToolCallResult    = "gen_ai.tool.call.result"
)

// spanTextMax bounds the arguments and result kept on a span: the whole
// result is in the recording.
const spanTextMax = 4096

// toolSpan is the execute_tool span of a call, with the arguments and
// result redacted as prompts are.
func (e *exec) toolSpan(p *callPlan) store.Span {
	red := e.r.cfg.Journal.Redactor()
	a := store.Attributes{
		store.AttrGenAIOperationName: store.String("execute_tool"),
		AttrGenAIToolName:            store.String(p.call.Name),
		AttrGenAIToolCallID:          store.String(p.call.ID),
		AttrGenAIToolType:            store.String("function"),
		AttrGenAIToolCallArguments:   store.String(clipText(red.RedactString(string(p.call.Arguments)), spanTextMax)),
		"sextant.tool.decision":      store.String(p.decision),
		"sextant.recorded":           store.Bool(p.recorded),
	}
	if p.result != nil {
		text := p.result.Content
		if text == "" {
			text = string(p.result.Structured)
		}
		a[AttrGenAIToolCallResult] = store.String(clipText(red.RedactString(text), spanTextMax))
	}
	if p.off != nil {
		a["sextant.tool.source"] = store.String(p.off.source)
	}
	if p.key != "" {
		a["sextant.recording"] = store.String(p.key)
		a["sextant.latency_ms"] = store.Int(p.latency.Milliseconds())
	}
	sp := store.Span{Name: "execute_tool " + p.call.Name, Kind: store.SpanInternal, Start: p.start,
		End: p.start.Add(p.latency), Attributes: a, Status: store.SpanStatus{Code: store.CodeOK}}
	if p.errType != "" {
		a[store.AttrErrorType] = store.String(p.errType)
		sp.Status = store.SpanStatus{Code: store.CodeError, Message: clipText(red.RedactString(p.result.Content), 500)}
	}
	return sp
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func clipArgs(canon []byte) string { return clipText(string(canon), 200) }
