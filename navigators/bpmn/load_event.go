package bpmn

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/sextant-dev/sextant/navigators/feel"
	"github.com/sextant-dev/sextant/sdk"
)

// eventDef reads an event definition into n.ev, n.key and n.hasRef.
func (l *loader) eventDef(d *xelem, n *node) {
	switch d.local {
	case "messageEventDefinition":
		n.ev = evMessage
		l.eventRef(d, n.elem(), n, "messageRef", l.messages, "message", "name")
	case "timerEventDefinition":
		n.ev = evTimer
		l.timerDef(d, n)
	case "signalEventDefinition":
		n.ev = evSignal
		l.eventRef(d, n.elem(), n, "signalRef", l.signals, "signal", "name")
	case "errorEventDefinition":
		n.ev = evError
		l.eventRef(d, n.elem(), n, "errorRef", l.errs, "error", "errorCode")
	case "escalationEventDefinition":
		n.ev = evEscalation
		l.eventRef(d, n.elem(), n, "escalationRef", l.escalations, "escalation", "escalationCode")
	case "terminateEventDefinition":
		n.ev = evTerminate
	case "linkEventDefinition":
		n.ev = evLink
		n.key = d.attr("name")
	case "compensateEventDefinition":
		n.ev = evCompensate
		l.compensateDef(d, n)
	case "cancelEventDefinition":
		n.ev = evCancel
	case "conditionalEventDefinition":
		n.ev = evConditional
		l.conditionalDef(d, n)
	}
}

// eventRef resolves the declaration (a <what>) that attribute attr of d
// (an event definition, or a receive task) names: n catches or throws it
// by the declaration's codeAttr, or by its id when that is empty. el is d's
// element in problems.
func (l *loader) eventRef(d *xelem, el string, n *node, attr string, decls map[string]*xelem, what, codeAttr string) {
	ref := d.attr(attr)
	if ref == "" {
		return
	}
	decl, ok := decls[ref]
	if !ok {
		l.problem(d.line, el, "%s %q names no <%s>", attr, ref, what)
		return
	}
	n.hasRef = true
	n.key = ref
	if what == "message" {
		n.msgRef = ref
	}
	if v := decl.attr(codeAttr); v != "" {
		n.key = v
	}
}

// timerDef reads the timeDate, timeDuration or timeCycle of a timer event
// definition.
func (l *loader) timerDef(d *xelem, n *node) {
	for _, t := range d.kids {
		if !t.isBPMN("timeDate") && !t.isBPMN("timeDuration") && !t.isBPMN("timeCycle") {
			continue
		}
		if n.timerKind != "" {
			// BPMN allows one; running either would be a guess.
			l.problem(t.line, n.elem(), "timerEventDefinition has %s and %s: give one", n.timerKind, t.local)
			continue
		}
		v := strings.TrimSpace(t.text)
		if c, err := checkTimer(t.local, v); err != nil {
			l.problem(t.line, n.elem(), "%s %q: %v", t.local, v, err)
		} else if c != nil {
			l.note(c)
			n.timerExpr = c
			l.listExpr(sdk.Expression{Element: n.elem(), Line: t.line, What: t.local, Text: v}, c)
		}
		n.timer = t.local + " " + v
		n.timerKind = t.local
		if v == "" {
			l.problem(t.line, n.elem(), "%s has no value", t.local)
		}
	}
	if n.timerKind == "" {
		// Zeebe refuses such a timer at deploy: it would never fire.
		l.problem(d.line, n.elem(), "timerEventDefinition has no timeDate, timeDuration or timeCycle")
	}
}

// compensateDef reads a compensation event definition: whether the thrower
// waits, and the activity it compensates (all of its scope's when none).
func (l *loader) compensateDef(d *xelem, n *node) {
	n.compNoWait = d.attr("waitForCompletion") == "false"
	if ref := d.attr("activityRef"); ref != "" {
		a := l.m.byID[ref]
		switch {
		case a == nil || !(a.k.isActivity() || a.k == kCallActivity):
			l.problem(d.line, n.elem(), "activityRef %q names no activity", ref)
		default:
			n.compRef = a
		}
	}
}

// conditionalDef reads the condition of a conditional event definition.
func (l *loader) conditionalDef(d *xelem, n *node) {
	if c := d.kid("condition"); c != nil && strings.TrimSpace(c.text) != "" {
		if l.expr(c.line, n.elem(), "condition", c.text) != nil {
			// The host evaluates it: give it plain FEEL (no "=", JUEL translated).
			n.condition, _ = feelText(strings.TrimSpace(c.text))
		}
	} else {
		// Zeebe refuses it at deploy: it could never become true.
		l.problem(d.line, n.elem(), "conditionalEventDefinition has no condition")
	}
}

var (
	isoWeeks = regexp.MustCompile(`^P\d{1,6}W$`)
	isoZone  = regexp.MustCompile(`^(.*?[0-9])(Z|[+-]\d{2}:?\d{2})?\[([A-Za-z_+\-/0-9]+)\]$`)

	feelDuration = feel.MustParse(`duration(v)`)
	feelDateTime = feel.MustParse(`date and time(v)`)
)

// isExpr reports whether a timer value is an expression.
func isExpr(v string) bool {
	return strings.HasPrefix(v, "=") || strings.HasPrefix(v, "${") || strings.HasPrefix(v, "#{")
}

// checkTimer validates a timer value as Zeebe reads it: an ISO 8601
// duration (PT30S, P1DT2H), date-time (2026-01-02T15:04:05Z, also with a
// [Region/City] zone) or repetition (R3/PT10M, R/PT1H,
// R2/2026-01-02T00:00:00Z/P1D), a cron expression for cycles (cron.go),
// or a FEEL
// expression (=...), which is parsed here and evaluated when the timer
// starts.
func checkTimer(kind, v string) (*cond, error) {
	if v == "" {
		return nil, nil
	}
	if isExpr(v) {
		return compileCond(v)
	}
	switch kind {
	case "timeDuration":
		if !isDuration(v) {
			return nil, fmt.Errorf("not an ISO 8601 duration (like PT30S)")
		}
	case "timeDate":
		if !isDateTime(v) {
			return nil, fmt.Errorf("not an ISO 8601 date-time (like 2026-01-02T15:04:05Z)")
		}
	case "timeCycle":
		if isCron(v) {
			c, err := parseCron(v)
			if err != nil {
				return nil, err
			}
			if _, ok := c.next(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)); !ok {
				return nil, fmt.Errorf("the cron cycle matches no date")
			}
			return nil, nil
		}
		if !isCycle(v) {
			return nil, fmt.Errorf("not an ISO 8601 repetition (like R3/PT10M) or a cron expression (like 0 0 9-17 * * MON-FRI)")
		}
	}
	return nil, nil
}

// isDuration reports whether v is an ISO 8601 duration, as FEEL's
// duration() reads it.
func isDuration(v string) bool {
	if isoWeeks.MatchString(v) {
		return true // ISO 8601 weeks, which FEEL's durations lack
	}
	d, err := feelDuration.Eval(map[string]any{"v": v})
	return err == nil && d != nil
}

// isDateTime reports whether v is an ISO 8601 date-time (or a date), as
// FEEL's date and time() reads it; a [Region/City] suffix names the zone.
func isDateTime(v string) bool {
	if m := isoZone.FindStringSubmatch(v); m != nil {
		v = m[1] + "@" + m[3]
	}
	d, err := feelDateTime.Eval(map[string]any{"v": v})
	return err == nil && d != nil
}

// isCycle reports whether v is an ISO 8601 repetition: R[n]/duration,
// R[n]/start/duration or R[n]/duration/end.
func isCycle(v string) bool {
	parts := strings.Split(v, "/")
	if len(parts) < 2 || len(parts) > 3 || !strings.HasPrefix(parts[0], "R") {
		return false
	}
	if n := parts[0][1:]; n != "" {
		for _, c := range n {
			if c < '0' || c > '9' {
				return false
			}
		}
		if len(n) > 9 {
			return false
		}
	}
	if len(parts) == 2 {
		return isDuration(parts[1])
	}
	return isDateTime(parts[1]) && isDuration(parts[2]) || isDuration(parts[1]) && isDateTime(parts[2])
}
