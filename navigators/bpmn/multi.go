package bpmn

// Multi-instance activities. The token that arrives becomes the body: a
// scope token that carries the boundary events, the input items and the
// collected outputs. Each instance is a token inside it with attributes
// loopCounter (from 1) and the input element. Parallel bodies start every
// instance at once; sequential bodies start the next when one completes.

// startMI turns t into the body of its multi-instance activity.
func (r *run) startMI(t *tok) {
	n := r.node(t)
	mi := n.mi
	env := r.evalEnv(t, nil)
	var items []any
	count := 0
	if mi.collection != nil {
		v, err := mi.collection.value(env)
		if err != nil {
			r.failf(n, "", "input collection %q: %v", mi.collection.src, err)
			return
		}
		list, ok := toList(v)
		if !ok && v != nil {
			r.failf(n, "", "input collection %q gave %T, want a list", mi.collection.src, v)
			return
		}
		items = list
		count = len(items)
	} else {
		v, err := mi.cardinal.value(env)
		if err != nil {
			r.failf(n, "", "loopCardinality %q: %v", mi.cardinal.src, err)
			return
		}
		c, ok := toInt(v)
		if !ok || c < 0 {
			r.failf(n, "", "loopCardinality %q gave %v, want a whole number >= 0", mi.cardinal.src, v)
			return
		}
		count = c
	}
	t.kind = tkBody
	t.setAttr(attrMI, "body")
	r.rest(t, stScope, n.hostTriggers)
	if count == 0 {
		r.finishMI(t, nil)
		return
	}
	t.setAttr(attrMICount, count)
	if items != nil {
		t.setAttr(attrMIItems, items)
	}
	t.setAttr(attrMIOut, make([]any, count))
	if mi.sequential {
		t.setAttr(attrMINext, 1)
		r.spawn(t, 0)
		return
	}
	t.setAttr(attrMINext, count)
	for i := 0; i < count; i++ {
		r.spawn(t, i)
	}
}

// spawn starts instance i (from 0) of body.
func (r *run) spawn(body *tok, i int) {
	n := r.node(body)
	it := r.newTok(n, body)
	it.kind = tkInstance
	it.setAttr(attrMI, "instance")
	it.setAttr(attrLoopCounter, i+1)
	if el := n.mi.element; el != "" {
		var item any
		if items, ok := body.attr(attrMIItems).([]any); ok && i < len(items) {
			item = items[i]
		}
		it.setAttr(el, item)
	}
	r.activate(it)
}

// instanceDone records the output of a completed instance and starts the
// next one, or completes the body.
func (r *run) instanceDone(it *tok, output map[string]any) {
	body := it.scope
	n := r.node(it)
	mi := n.mi
	idx, _ := toInt(it.attr(attrLoopCounter))
	idx--
	var val any
	if output != nil {
		val = output
	}
	if mi.outElem != nil {
		sc := r.evalEnv(it, nil)
		sc.out = output
		v, err := mi.outElem.value(sc)
		if err != nil {
			r.failf(n, "", "output element %q: %v", mi.outElem.src, err)
			return
		}
		val = v
	}
	outs, _ := body.attr(attrMIOut).([]any)
	if idx >= 0 && idx < len(outs) {
		next := append([]any(nil), outs...)
		next[idx] = val
		body.setAttr(attrMIOut, next)
		outs = next
	}
	r.kill(it)
	count, _ := toInt(body.attr(attrMICount))
	started, _ := toInt(body.attr(attrMINext))
	done, _ := toInt(body.attr(attrMIDone))
	done++
	body.setAttr(attrMIDone, done)
	if mi.completion != nil {
		ok, err := mi.completion.test(r.evalEnv(it, map[string]any{
			miCounters[0]: count,
			miCounters[1]: done,
			miCounters[2]: started - done,
		}))
		if err != nil {
			r.failf(n, "", "completionCondition %q: %v", mi.completion.src, err)
			return
		}
		if ok {
			r.killChildren(body)
			r.finishMI(body, outs)
			return
		}
	}
	if mi.sequential && started < count {
		body.setAttr(attrMINext, started+1)
		r.spawn(body, started)
		return
	}
	if r.hasChildren(body) {
		return
	}
	r.finishMI(body, outs)
}

// finishMI sets the output collection and leaves the activity.
func (r *run) finishMI(body *tok, outs []any) {
	n := r.node(body)
	if n.mi.outColl != "" {
		if r.set == nil {
			r.set = map[string]any{}
		}
		if outs == nil {
			outs = []any{}
		}
		r.set[n.mi.outColl] = outs
	}
	body.delAttr(attrMIItems)
	r.sendMessages(n)
	r.push(opExit, body)
}

// miCounters are the names a completion condition sees besides the
// variables: the instances, those completed, those still active.
var miCounters = [3]string{"nrOfInstances", "nrOfCompletedInstances", "nrOfActiveInstances"}
