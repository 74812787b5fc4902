package bpmn

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sextant-dev/sextant/sdk"
)

// driver walks a routine the way `sextant routine simulate` does (see
// host/internal/run/simulate.go): ready tokens complete at once, choices are answered
// from a table, triggers are delivered one at a time. It lives here so that
// the navigator's tests do not import the host.
type driver struct {
	nv      sdk.Navigator
	routine *sdk.Routine
	st      sdk.State
	choose  map[string][]string
	events  []sdk.Event
	choice  *sdk.Choice
	fault   *sdk.Fault
	calls   int
	max     int // call limit; 0 means driverMaxCalls
	// pending triggers: one naming a boundary event of a ready token fires
	// it instead of completing the token (as Simulate does).
	pending []string
	// fail makes the tasks at these nodes fail with the error code.
	fail map[string]string
	// after, if set, sees each state a decision leaves and may rewrite
	// it (seq is the state's Seq before the call).
	after func(seq int64, st sdk.State) sdk.State
}

func newDriver(nv sdk.Navigator, r *sdk.Routine) *driver {
	return &driver{nv: nv, routine: r, st: sdk.State{Routine: r.Hash}, choose: map[string][]string{}}
}

const driverMaxCalls = 5000

// wireMode sends decisions and states through JSON, as wire transports do.
var wireMode bool

func roundTrip[T any](v *T) *T {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	out := new(T)
	if err := json.Unmarshal(b, out); err != nil {
		panic(err)
	}
	return out
}

func (d *driver) apply(dec *sdk.Decision, err error) error {
	d.calls++
	if err != nil {
		return err
	}
	if wireMode {
		dec = roundTrip(dec)
	}
	d.events = append(d.events, dec.Trace...)
	seq := d.st.Seq
	d.st = dec.Apply(d.st)
	if d.after != nil {
		d.st = d.after(seq, d.st)
	}
	if wireMode {
		d.st = *roundTrip(&d.st)
	}
	d.choice = dec.Choice
	if dec.Fault != nil {
		d.fault = dec.Fault
	}
	return nil
}

// settle completes ready tokens and answers choices until only waiting
// tokens (or none) remain.
func (d *driver) settle() error {
	ctx := context.Background()
	for d.fault == nil {
		if max := d.max; d.calls > driverMaxCalls || (max > 0 && d.calls > max) {
			return fmt.Errorf("more than %d navigator calls", d.calls-1)
		}
		if c := d.choice; c != nil {
			flows, ok := d.choose[c.Node]
			if !ok {
				flows = []string{c.Flows[0].ID}
				if c.Multi {
					flows = nil
					for _, f := range c.Flows {
						flows = append(flows, f.ID)
					}
				}
			}
			if err := d.apply(d.nv.Next(ctx, &sdk.NextRequest{State: d.st, Token: c.Token, Outcome: sdk.Outcome{Status: sdk.OK, Flows: flows}})); err != nil {
				return err
			}
			continue
		}
		var ready *sdk.Token
		for i := range d.st.Tokens {
			if d.st.Tokens[i].Status == sdk.Ready {
				ready = &d.st.Tokens[i]
				break
			}
		}
		if ready == nil {
			return nil
		}
		if len(d.pending) > 0 && hasString(ready.Triggers, d.pending[0]) {
			ev := d.pending[0]
			d.pending = d.pending[1:]
			if err := d.apply(d.nv.Boundary(ctx, &sdk.BoundaryRequest{State: d.st, Token: ready.ID, Event: ev})); err != nil {
				return err
			}
			continue
		}
		out := sdk.Outcome{Status: sdk.OK}
		if code, ok := d.fail[ready.Node]; ok {
			out = sdk.Outcome{Status: sdk.Failed, Error: code}
		}
		if err := d.apply(d.nv.Next(ctx, &sdk.NextRequest{State: d.st, Token: ready.ID, Outcome: out})); err != nil {
			return err
		}
	}
	return nil
}

// trigger delivers an event to the oldest token waiting for it, or starts
// an instance at a start node.
func (d *driver) trigger(id string) error {
	ctx := context.Background()
	for _, t := range d.st.Tokens {
		for _, tr := range t.Triggers {
			if tr == id {
				return d.apply(d.nv.Boundary(ctx, &sdk.BoundaryRequest{State: d.st, Token: t.ID, Event: id}))
			}
		}
	}
	for _, s := range d.routine.Starts {
		if s == id {
			return d.apply(d.nv.Start(ctx, &sdk.StartRequest{State: d.st, Trigger: id}))
		}
	}
	return fmt.Errorf("nothing waits for %q", id)
}

// run walks the routine as Simulate does: the first trigger starts it
// when it names a start node, else the none start event does; then
// triggers are delivered in order whenever nothing else can move.
func (d *driver) run(triggers []string) error {
	ctx := context.Background()
	d.pending = append([]string(nil), triggers...)
	started := false
	if len(d.pending) > 0 {
		for _, s := range d.routine.Starts {
			if s == d.pending[0] {
				started = true
			}
		}
	}
	if started {
		id := d.pending[0]
		d.pending = d.pending[1:]
		if err := d.apply(d.nv.Start(ctx, &sdk.StartRequest{State: d.st, Trigger: id})); err != nil {
			return err
		}
	} else if err := d.apply(d.nv.Start(ctx, &sdk.StartRequest{State: d.st})); err != nil {
		return err
	}
	for {
		if err := d.settle(); err != nil {
			return err
		}
		if d.fault != nil || len(d.pending) == 0 {
			return nil
		}
		id := d.pending[0]
		d.pending = d.pending[1:]
		if err := d.trigger(id); err != nil {
			return err
		}
	}
}

// status renders the end state as simulate's last line does.
func (d *driver) status() string {
	if d.fault != nil {
		return "error:" + d.fault.Message
	}
	if len(d.st.Tokens) == 0 {
		return "completed"
	}
	var ids []string
	for _, t := range d.st.Tokens {
		if t.Status == sdk.Scope {
			continue
		}
		if !hasString(ids, t.Node) {
			ids = append(ids, t.Node)
		}
	}
	return "waiting:" + strings.Join(ids, ",")
}

func (d *driver) lines() []string {
	out := make([]string, 0, len(d.events)+1)
	for _, e := range d.events {
		out = append(out, string(e.Type)+":"+e.Node)
	}
	return append(out, d.status())
}
