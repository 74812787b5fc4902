package bpmn

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sextant-dev/sextant/sdk"
)

// FuzzLoad feeds arbitrary documents to the parser and validator. Every
// input must load or be rejected with positioned problems; a document that
// loads is then walked a little, and no call may fail internally.
//
// The seed corpus is the fixtures in testdata/routines plus the inputs kept
// in testdata/fuzz/FuzzLoad.
func FuzzLoad(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "routines", "*.bpmn"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(doc(`<process id="p"><startEvent id="s"/></process>`)))
	f.Add([]byte(doc(`<process id="p"><startEvent id="s"/><sequenceFlow id="f0" sourceRef="s" targetRef="t"/>
<serviceTask id="t"><extensionElements><zeebe:taskDefinition type="x"/><zeebe:taskHeaders><zeebe:header key="k" value="v"/></zeebe:taskHeaders>
<zeebe:ioMapping><zeebe:input source="=a.b[1]" target="c.d"/><zeebe:output source="=s" target="r"/></zeebe:ioMapping></extensionElements></serviceTask>
<sequenceFlow id="f1" sourceRef="t" targetRef="g"/><exclusiveGateway id="g" default="f3"/>
<sequenceFlow id="f2" sourceRef="g" targetRef="w"><conditionExpression>${r == 'x' &amp;&amp; !q}</conditionExpression></sequenceFlow>
<sequenceFlow id="f3" sourceRef="g" targetRef="w"><conditionExpression>=r in [1..10]</conditionExpression></sequenceFlow>
<intermediateCatchEvent id="w"><timerEventDefinition><timeCycle>R3/PT10M</timeCycle></timerEventDefinition></intermediateCatchEvent></process>`)))
	f.Add([]byte(`<?xml version="1.0" encoding="ISO-8859-1"?><definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"><process id="\xe9"/></definitions>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		began := time.Now()
		defer func() {
			if d := time.Since(began); d > 3*time.Second {
				t.Fatalf("took %v", d)
			}
		}()
		nv := New()
		r, err := nv.Load(context.Background(), &sdk.LoadRequest{Name: "fuzz.bpmn", Routine: data})
		if err != nil {
			var e *sdk.Error
			if !errors.As(err, &e) || e.Code != sdk.CodeInvalid || len(e.Problems) == 0 {
				t.Fatalf("want positioned problems, got %T %v", err, err)
			}
			for _, p := range e.Problems {
				if p.File != "fuzz.bpmn" || p.Line <= 0 {
					t.Fatalf("problem without a position: %q", p.String())
				}
				if strings.Contains(p.Message, "internal error") {
					t.Fatalf("loader panicked: %s", p)
				}
			}
			return
		}
		if r.Hash == "" || r.ID == "" {
			t.Fatalf("routine without hash or id: %+v", r)
		}
		// Walk what loaded: every start, bounded, answering choices with
		// the first flow and firing the first trigger of waiting tokens.
		for _, s := range append([]string{""}, r.Starts...) {
			d := newDriver(nv, r)
			d.max = 50
			err := d.apply(nv.Start(context.Background(), &sdk.StartRequest{State: d.st, Trigger: s}))
			for i := 0; err == nil && i < 20 && d.fault == nil; i++ {
				if err = d.settle(); err != nil {
					break
				}
				fired := false
				for _, tk := range d.st.Tokens {
					if len(tk.Triggers) > 0 {
						err = d.apply(nv.Boundary(context.Background(), &sdk.BoundaryRequest{State: d.st, Token: tk.ID, Event: tk.Triggers[0]}))
						fired = true
						break
					}
				}
				if !fired {
					break
				}
			}
			if d.fault != nil && strings.Contains(d.fault.Message, "internal error") {
				t.Fatalf("start %q: %s", s, d.fault.Message)
			}
			if err != nil && strings.HasPrefix(err.Error(), "more than") {
				err = nil // a routine that loops through tasks forever
			}
			if err != nil && sdk.AsError(err).Code != sdk.CodeInvalid {
				t.Fatalf("start %q: %v", s, err)
			}
		}
	})
}
