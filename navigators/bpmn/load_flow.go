package bpmn

import (
	"strings"
)

// flow reads a sequence flow of container c.
func (l *loader) flow(x *xelem, c *node) {
	f := &flow{id: x.attr("id"), line: x.line}
	el := elemOf(x)
	if !l.claim(x) {
		return
	}
	ok := true
	end := func(attr string) *node {
		ref := x.attr(attr)
		n := l.m.byID[ref]
		switch {
		case ref == "":
			l.problem(x.line, el, "missing %s", attr)
		case l.rejected[ref]:
			// already reported
		case n == nil || n.k == kProcess:
			l.problem(x.line, el, "%s %q names no flow node", attr, ref)
		case n.parent != c:
			l.problem(x.line, el, "%s %q is in another scope", attr, ref)
		default:
			return n
		}
		ok = false
		return nil
	}
	f.src, f.dst = end("sourceRef"), end("targetRef")
	l.zeebeElsewhere(x, el)
	for _, k := range x.kids {
		if !k.isBPMN("conditionExpression") {
			if k.space == nsBPMN && !ignored[k.local] {
				l.problem(k.line, el, "unsupported element <%s>", k.local)
			}
			continue
		}
		src := strings.TrimSpace(k.text)
		if src == "" {
			continue
		}
		if lang := k.attr("language"); lang != "" && !exprLanguage(lang) {
			l.problem(k.line, el, "condition language %q is not supported (write a FEEL expression, optionally prefixed with =)", lang)
			continue
		}
		if c := l.expr(k.line, el, "condition", src); c != nil {
			f.cond = c
		}
	}
	if !ok {
		return
	}
	f.parked = map[string]any{attrFlow: f.id}
	l.m.flows[f.id] = f
	f.src.out = append(f.src.out, f)
	f.dst.in = append(f.dst.in, f)
}

func exprLanguage(lang string) bool {
	switch strings.ToLower(lang) {
	case "feel", "juel", "http://www.omg.org/spec/feel/20140401", "https://www.omg.org/spec/dmn/20191111/feel/",
		"https://www.omg.org/spec/dmn/20230324/feel/", "http://www.omg.org/spec/dmn/20151101/feel":
		return true
	}
	return false
}

// collaboration reads participants and message flows.
func (l *loader) collaboration(x *xelem) {
	for _, k := range x.kids {
		if k.space != nsBPMN {
			continue
		}
		switch k.local {
		case "participant":
			id := k.attr("id")
			if id != "" {
				if line, dup := l.seen[id]; dup {
					l.problem(k.line, elemOf(k), "duplicate id (first used on line %d)", line)
				}
				l.seen[id] = k.line
				l.participants[id] = k
			}
			if ref := k.attr("processRef"); ref != "" {
				if p := l.m.byID[ref]; p == nil || p.k != kProcess {
					l.problem(k.line, elemOf(k), "processRef %q names no process", ref)
				}
			}
		case "messageFlow":
			src, dst := k.attr("sourceRef"), k.attr("targetRef")
			sn, dn := l.m.byID[src], l.m.byID[dst]
			_, sp := l.participants[src]
			_, dp := l.participants[dst]
			if sn == nil && !sp && !l.isParticipant(x, src) {
				l.problem(k.line, elemOf(k), "sourceRef %q names no flow node or participant", src)
				continue
			}
			if dn == nil && !dp && !l.isParticipant(x, dst) {
				l.problem(k.line, elemOf(k), "targetRef %q names no flow node or participant", dst)
				continue
			}
			if dn != nil && dn.k == kProcess {
				dn = nil
			}
			if sn != nil && sn.k != kProcess && dn != nil {
				sn.msgOut = append(sn.msgOut, dn)
			}
			if dn != nil && dn.k == kTask {
				dn.msgIn = true
			}
		default:
			if !ignoredCollab[k.local] && !ignored[k.local] {
				l.problem(k.line, elemOf(k), "unsupported element <%s>", k.local)
			}
		}
	}
}

func (l *loader) isParticipant(collab *xelem, id string) bool {
	for _, k := range collab.kids {
		if k.isBPMN("participant") && k.attr("id") == id {
			return true
		}
	}
	return false
}

// associations links compensation boundary events to their handlers.
func (l *loader) associations() {
	for _, x := range l.pendingAssoc {
		src, dst := l.m.byID[x.attr("sourceRef")], l.m.byID[x.attr("targetRef")]
		if src == nil || dst == nil {
			continue // associations to annotations and data are decoration
		}
		if src.k == kBoundary && src.ev == evCompensate && src.attached != nil {
			if !dst.forComp {
				l.problem(x.line, elemOf(x), "a compensation boundary event must be associated with an activity marked isForCompensation=\"true\", not %s", dst.elem())
				continue
			}
			src.attached.compHandler = dst
		}
	}
}

// defaults resolves default flows once every flow is known.
func (l *loader) defaults() {
	for _, pn := range l.pendingNodes {
		n := pn.n
		ref := pn.x.attr("default")
		if ref == "" {
			continue
		}
		f := l.m.flows[ref]
		if f == nil || f.src != n {
			l.problem(pn.x.line, n.elem(), "default flow %q is not an outgoing sequence flow of this element", ref)
			continue
		}
		if f.cond != nil {
			l.problem(f.line, f.elem(), "the default flow of %s cannot have a condition", n.elem())
		}
		if n.k == kParallel || n.k == kEventGateway {
			l.problem(pn.x.line, n.elem(), "a %s has no default flow", n.tag)
		}
		n.def = f
	}
}
