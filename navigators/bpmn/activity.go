package bpmn

// activate starts the work of an activity token (a plain one, or one
// multi-instance instance).
func (r *run) activate(t *tok) {
	switch r.node(t).k {
	case kTask:
		r.activateTask(t)
	case kReceiveTask:
		r.rest(t, stWaiting, r.waitTriggers(t))
	case kSubProcess:
		r.activateSubProcess(t)
	case kCallActivity:
		r.callProcess(t)
	}
}

// hostTriggers are the triggers of activity token t while it works: its
// boundary events, which the body holds for an instance of a
// multi-instance activity.
func (r *run) hostTriggers(t *tok) []string {
	if t.kind == tkInstance {
		return nil
	}
	return r.node(t).hostTriggers
}

// waitTriggers are the triggers of activity token t while it waits for
// its message: its own id and its boundary events (an instance: its own id
// alone).
func (r *run) waitTriggers(t *tok) []string {
	if t.kind == tkInstance {
		return []string{r.node(t).id}
	}
	return r.node(t).waitTriggers
}

// activateTask readies a task for the host, after its input mappings and,
// when a message flow leads to it, after its message.
func (r *run) activateTask(t *tok) {
	n := r.node(t)
	if (n.headers != nil || n.inMaps != nil) && !r.inputs(t) {
		return
	}
	if n.msgIn && t.attr(attrMsgWait) == nil {
		t.setAttr(attrMsgWait, true)
		r.rest(t, stWaiting, r.waitTriggers(t))
		return
	}
	if n.script != nil {
		r.runScript(t)
		return
	}
	if n.decision != nil {
		r.runDecision(t)
		return
	}
	r.rest(t, stReady, r.hostTriggers(t))
}

// activateSubProcess makes t the scope of its sub-process and starts it:
// its none start events and the nodes without incoming flows. A
// sub-process with nothing to start completes at once.
func (r *run) activateSubProcess(t *tok) {
	n := r.node(t)
	if n.inMaps != nil && !r.inputs(t) {
		return
	}
	trig := n.scopeTriggers
	if t.kind == tkInstance {
		trig = n.subTriggers
	}
	r.rest(t, stScope, trig)
	started := false
	for _, s := range n.starts {
		r.push(opSignal, r.newTok(s, t))
		started = true
	}
	for _, s := range n.implicit {
		r.push(opEnter, r.newTok(s, t))
		started = true
	}
	if !started {
		r.tryComplete(t)
	}
}

// callProcess starts an instance of the process call activity t calls,
// inside t.
func (r *run) callProcess(t *tok) {
	n := r.node(t)
	r.rest(t, stScope, r.hostTriggers(t))
	p := n.called
	if len(p.starts) == 0 && len(p.implicit) == 0 {
		r.failf(n, "", "called process %q has no none start event", p.id)
		return
	}
	inst := r.newTok(p, t)
	r.rest(inst, stScope, p.subTriggers)
	if len(p.starts) > 0 {
		r.push(opSignal, r.newTok(p.starts[0], inst))
	}
	for _, s := range p.implicit {
		r.push(opEnter, r.newTok(s, inst))
	}
}

// activityDone continues after an activity completed normally.
func (r *run) activityDone(t *tok, output map[string]any) {
	if n := r.node(t); n.k == kTask {
		if n.outMaps == nil {
			// Zeebe merges a job's variables into the process; with
			// output mappings, the mappings decide what is written.
			if vars := resultVars(n, output); vars != nil {
				r.propagate(t, vars)
			}
		} else if r.outputs(t, output); r.fault != nil {
			return
		}
	}
	if t.kind == tkInstance {
		r.instanceDone(t, output)
		return
	}
	r.sendMessages(r.node(t))
	r.push(opExit, t)
}
