package bpmn

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/sextant-dev/sextant/navigators/dmn"
	"github.com/sextant-dev/sextant/sdk"
)

// Business rule tasks (zeebe:calledDecision). The DMN models a routine
// may call come with its LoadRequest (sdk.LoadRequest.Decisions: a
// pipeline's [routine] decisions); each is parsed once per content by
// navigators/dmn and kept by the Navigator beside its routines. A task's
// decisionId must be in exactly one of them, checked at load. When the
// task is reached the navigator evaluates the decision itself, no step
// runs: the decision sees every variable visible at the task (the start
// input's, the process variables, the locals of the task and its scopes),
// as in Zeebe, and its value is written to resultVariable (through the
// output mappings when there are some). An evaluation error (a UNIQUE
// table with two matching rules, an input of the wrong type) ends the run
// with a Fault positioned at the task, as Zeebe raises an incident.

// dmnFile is one parsed decision file.
type dmnFile struct {
	name  string
	model *dmn.Model
}

// calledDecision is a business rule task's zeebe:calledDecision.
type calledDecision struct {
	id    string
	model *dmn.Model
	file  string
}

// dmnKey names a decision file's content in the Navigator's cache: the
// name is part of it, since error messages carry it.
func dmnKey(f sdk.File) string {
	h := sha256.New()
	writeBlob(h, []byte(f.Name))
	writeBlob(h, f.Data)
	return hex.EncodeToString(h.Sum(nil))
}

// routineHash is sdk.Routine.Hash: the routine's sha256, or with decision
// files, the sha256 of the routine and each file's name and bytes, each
// prefixed by its length so that no two inputs read alike.
func routineHash(data []byte, files []sdk.File) string {
	if len(files) == 0 {
		sum := sha256.Sum256(data)
		return hex.EncodeToString(sum[:])
	}
	h := sha256.New()
	writeBlob(h, data)
	for _, f := range files {
		writeBlob(h, []byte(f.Name))
		writeBlob(h, f.Data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func writeBlob(h interface{ Write([]byte) (int, error) }, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	h.Write(n[:])
	h.Write(b)
}

// decisionFiles parses the request's decision files, each once per
// content (nv's cache). A file that does not load is a problem at its own
// file:line.
func (nv *Navigator) decisionFiles(files []sdk.File) ([]dmnFile, error) {
	if len(files) == 0 {
		return nil, nil
	}
	out := make([]dmnFile, 0, len(files))
	var probs []sdk.Problem
	for _, f := range files {
		key := dmnKey(f)
		nv.mu.RLock()
		m := nv.models[key]
		nv.mu.RUnlock()
		if m == nil {
			var err error
			if m, err = dmn.Parse(f.Name, f.Data); err != nil {
				probs = append(probs, dmnProblem(f.Name, err))
				continue
			}
			nv.mu.Lock()
			if old := nv.models[key]; old != nil {
				m = old
			} else {
				nv.models[key] = m
			}
			nv.mu.Unlock()
		}
		out = append(out, dmnFile{name: f.Name, model: m})
	}
	if len(probs) > 0 {
		return nil, sdk.Invalid(probs...)
	}
	return out, nil
}

// dmnProblem positions a DMN load error.
func dmnProblem(file string, err error) sdk.Problem {
	var e *dmn.Error
	if errors.As(err, &e) {
		return sdk.Problem{File: e.File, Line: e.Line, Element: e.Element, Message: e.Msg}
	}
	return sdk.Problem{File: file, Message: err.Error()}
}

// zeebeDecision reads a business rule task's zeebe:calledDecision.
func (l *loader) zeebeDecision(e *xelem, n *node) {
	if n.tag != "businessRuleTask" {
		l.problem(e.line, n.elem(), "zeebe:calledDecision is only allowed on business rule tasks")
		return
	}
	id := strings.TrimSpace(e.attr("decisionId"))
	res := strings.TrimSpace(e.attr("resultVariable"))
	switch {
	case id == "":
		l.problem(e.line, n.elem(), "zeebe:calledDecision: missing decisionId")
		return
	case strings.HasPrefix(id, "="):
		l.problem(e.line, n.elem(), "zeebe:calledDecision decisionId %q: expressions are not supported (name the decision's id)", id)
		return
	case res == "":
		l.problem(e.line, n.elem(), "zeebe:calledDecision: missing resultVariable (the variable the decision's result is written to)")
		return
	case !isIdent(res):
		l.problem(e.line, n.elem(), "zeebe:calledDecision resultVariable %q: not a variable name", res)
		return
	}
	if b := e.attr("bindingType"); b != "" && b != "latest" && b != "deployment" {
		l.problem(e.line, n.elem(), "zeebe:calledDecision bindingType %q is not supported (the pipeline's decision files are the only version)", b)
		return
	}
	var found []dmnFile
	for _, f := range l.dmn {
		if f.model.Has(id) {
			found = append(found, f)
		}
	}
	switch {
	case len(l.dmn) == 0:
		l.problem(e.line, n.elem(), "zeebe:calledDecision %q: no DMN files were given (a pipeline's [routine] decisions, or --decisions)", id)
		return
	case len(found) == 0:
		names := make([]string, len(l.dmn))
		for i, f := range l.dmn {
			names[i] = f.name
		}
		l.problem(e.line, n.elem(), "zeebe:calledDecision %q: no decision with that id in %s", id, strings.Join(names, ", "))
		return
	case len(found) > 1:
		l.problem(e.line, n.elem(), "zeebe:calledDecision %q: the decision is in both %s and %s", id, found[0].name, found[1].name)
		return
	}
	n.decision = &calledDecision{id: id, model: found[0].model, file: found[0].name}
	n.resultVar, n.step = res, false
	n.io.Outputs = appendName(n.io.Outputs, res)
	// The decision may read any variable in scope.
	l.reads.All()
}

// runDecision runs business rule task t: the decision's value becomes its
// result variable, and the task completes as if a step had returned it.
func (r *run) runDecision(t *tok) {
	n := r.node(t)
	d := n.decision
	v, err := d.model.EvaluateVars(context.Background(), d.id, r.visible(t), r.env.Now)
	if err != nil {
		if r.fault == nil {
			r.fault = &sdk.Fault{Node: n.id, Message: fmt.Sprintf("%s:%d: %s: zeebe:calledDecision %q: %v", r.m.file, n.line, n.elem(), d.id, err)}
		}
		return
	}
	r.activityDone(t, map[string]any{n.resultVar: plain(v)})
}

// visible is every variable an expression at token t sees by name, as one
// map: the start input's, the process variables over them, then the
// locals of t's scopes, innermost last.
func (r *run) visible(t *tok) map[string]any {
	vars := make(map[string]any, len(r.env.Input)+len(r.env.Vars))
	for k, v := range r.env.Input {
		vars[k] = v
	}
	for k, v := range r.env.Vars {
		vars[k] = v
	}
	var chain []*tok
	for s := t; s != nil; s = s.scope {
		chain = append(chain, s)
	}
	for i := len(chain) - 1; i >= 0; i-- {
		s := chain[i]
		for _, name := range r.localNames(s) {
			vars[name] = s.attr(name)
		}
	}
	return vars
}

// localNames lists the local variables token t holds (see holds).
func (r *run) localNames(t *tok) []string {
	var out []string
	if t.kind == tkBody {
		return nil
	}
	if t.kind == tkInstance {
		out = append(out, attrLoopCounter)
		if mi := r.node(t).mi; mi != nil {
			if mi.element != "" {
				out = append(out, mi.element)
			}
			if mi.outLocal != "" {
				out = append(out, mi.outLocal)
			}
		}
	}
	for name := range r.node(t).locals {
		out = append(out, name)
	}
	return out
}
