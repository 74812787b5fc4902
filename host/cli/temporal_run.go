//go:build !notemporal

package cli

import (
	"context"
	"errors"
	"time"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/temporal"
)

// temporalLoc is where follow-up hints point: the store is the workers'.
var temporalLoc = storeLoc{from: fromEnv}

// runOnTemporal starts in as a workflow (task id = workflow id) and
// follows it: until it ends or waits for anything, or, with wait, until
// it ends or waits for a person.
func (a *app) runOnTemporal(ctx context.Context, tf temporalFlags, prep *run.Prepared, in run.Input, wait, asJSON bool) error {
	if prep.Pipeline.Evolve.Online {
		return withInvalid(errors.New("--temporal: this pipeline learns as it runs ([evolve] online = true), which needs the store to itself; run it without --temporal"))
	}
	c, err := temporal.Dial(ctx, tf.addr, tf.namespace)
	if err != nil {
		return err
	}
	defer c.Close()
	if in.ID == "" {
		in.ID = temporal.NewTaskID(time.Now())
	}
	ri := temporal.RunInput{Pipeline: prep.Pipeline.Name, Strategy: prep.Strategy.Hash(), Task: in.ID, Input: in.Input,
		Truth: in.Truth, Tags: in.Tags, Start: in.Start, LocalSteps: tf.localSteps}
	if t := prep.Pipeline.Limits.Timeout; t > 0 {
		ri.StepTimeout = t.Std()
	}
	if err := temporal.Start(ctx, c, tf.queueName(), ri); err != nil {
		return err
	}
	until := temporal.UntilWait
	if wait {
		until = temporal.UntilPerson
	}
	res, err := temporal.Follow(ctx, c, in.ID, until)
	if err != nil {
		return err
	}
	return a.report(res, asJSON, temporalLoc)
}

// resumeOnTemporal answers a run's waiting steps and follows it.
func (a *app) resumeOnTemporal(ctx context.Context, tf temporalFlags, task string, answers map[string]any, asJSON bool) error {
	c, err := temporal.Dial(ctx, tf.addr, tf.namespace)
	if err != nil {
		return err
	}
	defer c.Close()
	if len(answers) > 0 {
		if err := temporal.Resume(ctx, c, task, answers); err != nil {
			return err
		}
	}
	res, err := temporal.Follow(ctx, c, task, temporal.UntilWait)
	if err != nil {
		return err
	}
	return a.report(res, asJSON, temporalLoc)
}

// cancelOnTemporal cancels a run on Temporal; the workers record it.
func (a *app) cancelOnTemporal(ctx context.Context, tf temporalFlags, req cancelRequest) (*run.Result, error) {
	c, err := temporal.Dial(ctx, tf.addr, tf.namespace)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return temporal.Cancel(ctx, c, req.Task, run.Cancelled{By: req.By, Reason: req.Reason})
}

// sendOnTemporal delivers a message to a run and follows it.
func (a *app) sendOnTemporal(ctx context.Context, tf temporalFlags, task string, d run.Delivery, asJSON bool) error {
	c, err := temporal.Dial(ctx, tf.addr, tf.namespace)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := temporal.Deliver(ctx, c, task, d); err != nil {
		return err
	}
	res, err := temporal.Follow(ctx, c, task, temporal.UntilWait)
	if err != nil {
		return err
	}
	return a.report(res, asJSON, temporalLoc)
}

// signalOnTemporal broadcasts a signal to the runs waiting for it.
func (a *app) signalOnTemporal(ctx context.Context, tf temporalFlags, pipeline string, d run.Delivery, asJSON bool) error {
	c, err := temporal.Dial(ctx, tf.addr, tf.namespace)
	if err != nil {
		return err
	}
	defer c.Close()
	tasks, err := temporal.Broadcast(ctx, c, pipeline, d.Name, d.Vars)
	if err != nil {
		return err
	}
	var results []*run.Result
	for _, t := range tasks {
		res, err := temporal.Follow(ctx, c, t, temporal.UntilWait)
		if err != nil {
			return err
		}
		results = append(results, res)
	}
	return a.reportSignal(d.Name, results, asJSON)
}
