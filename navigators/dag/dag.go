package dag

import (
	"context"

	"github.com/sextant-dev/sextant/navigators/internal/routines"
	"github.com/sextant-dev/sextant/sdk"
)

func init() { sdk.Register(New()) }

// Version is the navigator's own version.
const Version = "0.1.0"

// Navigator is the DAG navigator. Create one with New; it is safe for
// concurrent use.
type Navigator struct {
	routines routines.Cache[*routine]
}

var _ sdk.Navigator = (*Navigator)(nil)

// New returns a DAG navigator with no routine loaded.
func New() *Navigator { return &Navigator{} }

// Describe implements sdk.Plugin.
func (*Navigator) Describe() sdk.Info {
	return sdk.Info{Name: "dag", Kind: sdk.KindNavigator, Version: Version, API: sdk.APIVersion,
		Description: "walks a TOML DAG of tasks with Airflow trigger rules, retries and for_each fan-out"}
}

// Load implements sdk.Navigator. A routine is parsed once per content hash.
func (n *Navigator) Load(_ context.Context, req *sdk.LoadRequest) (*sdk.Routine, error) {
	r, err := n.routines.Load(req.Routine, func(hash string) (*routine, error) {
		file := req.Name
		if file == "" {
			file = "dag.toml"
		}
		r, err := parse(file, req.Routine)
		if err != nil {
			return nil, err
		}
		r.summary.Hash = hash
		return r, nil
	})
	if err != nil {
		return nil, err
	}
	out := r.summary
	return &out, nil
}

func (n *Navigator) routine(hash string) (*routine, error) {
	return n.routines.Get("dag", hash)
}

// Start implements sdk.Navigator: every task that can run at once (no
// upstream, or rule "always") is returned Ready.
func (n *Navigator) Start(_ context.Context, req *sdk.StartRequest) (*sdk.Decision, error) {
	r, err := n.routine(req.State.Routine)
	if err != nil {
		return nil, err
	}
	if req.Trigger != "" {
		return nil, sdk.Errorf(sdk.CodeBadRequest, "dag %q: no start event %q (a DAG has none)", r.summary.ID, req.Trigger)
	}
	return r.start(&req.State)
}

// Next implements sdk.Navigator.
func (n *Navigator) Next(_ context.Context, req *sdk.NextRequest) (*sdk.Decision, error) {
	r, err := n.routine(req.State.Routine)
	if err != nil {
		return nil, err
	}
	return r.next(&req.State, req.Token, req.Outcome)
}

// Boundary implements sdk.Navigator. DAG tasks have no boundary events.
func (n *Navigator) Boundary(_ context.Context, req *sdk.BoundaryRequest) (*sdk.Decision, error) {
	r, err := n.routine(req.State.Routine)
	if err != nil {
		return nil, err
	}
	return nil, sdk.Errorf(sdk.CodeBadRequest, "dag %q: event %q: DAG tasks have no boundary events", r.summary.ID, req.Event)
}

// IO implements sdk.Navigator.
func (n *Navigator) IO(_ context.Context, req *sdk.IORequest) (*sdk.NodeIO, error) {
	r, err := n.routine(req.Routine)
	if err != nil {
		return nil, err
	}
	i, ok := r.index[req.Node]
	if !ok {
		return nil, sdk.Errorf(sdk.CodeBadRequest, "dag %q: no task %q", r.summary.ID, req.Node)
	}
	t := r.tasks[i]
	return &sdk.NodeIO{Inputs: t.inputs, Outputs: t.outputs}, nil
}
