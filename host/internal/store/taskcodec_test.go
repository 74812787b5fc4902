package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestTaskCodec: the hand-written task encoding is encoding/json's, for
// the tasks it writes itself and those it hands to encoding/json, and
// taskValue's is s.encode's, redacted as it redacts.
func TestTaskCodec(t *testing.T) {
	s := openTest(t)
	rng := rand.New(rand.NewPCG(43, 47))
	str := func() string {
		switch rng.IntN(4) {
		case 0:
			return ""
		case 1:
			return randString(rng) + []string{"\b", "<", "\u2028", "\xff"}[rng.IntN(4)]
		}
		return fmt.Sprintf("plain-%d", rng.IntN(1000))
	}
	tm := func() time.Time {
		switch rng.IntN(10) {
		case 0:
			return time.Time{}
		case 1:
			return randTime(rng).In(time.FixedZone("east", 5*3600+1800))
		}
		return randTime(rng)
	}
	bodies := []string{"", `{"topic":"x"}`, `{ "topic": "x" }`, `{"a":"<b>"}`, `"\u2028"`, `"a\u2028b"`, `[1,2.5,null,true]`, `"é"`, `{"api_key":"hunter2"}`}
	fast := 0
	for range 20000 {
		task := &Task{ID: str(), Pipeline: str(), Input: json.RawMessage(bodies[rng.IntN(len(bodies))]),
			Truth: json.RawMessage(bodies[rng.IntN(len(bodies))]), Status: Status(str()), Created: tm(),
			Strategy: StrategyRef{Name: str(), Version: str(), Hash: str()}, Routine: str(), Start: str()}
		for range rng.IntN(3) {
			task.Tags = append(task.Tags, str())
		}
		if rng.IntN(4) == 0 {
			task.Tags = []string{}
		}
		if n := rng.IntN(4); n > 0 {
			task.Rules = map[string]string{}
			for range n {
				task.Rules[str()] = str()
			}
		}
		switch rng.IntN(8) {
		case 0:
			task.Owner = &Lease{PID: rng.IntN(1 << 20), Host: str(), Started: tm()}
		case 1:
			task.Waits = []Wait{{Kind: WaitTimer, Node: str(), Due: tm()}}
		case 2:
			task.Waits = []Wait{}
		case 3:
			task.Incident = &Incident{Node: str(), Kind: "fault", Error: str(), Created: tm()}
		case 4:
			task.Cancelled = &Cancellation{By: str(), At: tm()}
		}
		want, wantErr := json.Marshal(task)
		got, gotErr := marshalTask(task)
		if !bytes.Equal(got, want) || (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("%+v marshals as\n%s (%v)\nencoding/json writes\n%s (%v)", task, got, gotErr, want, wantErr)
		}
		wantVal, wantErr := s.encode(task)
		gotVal, _, gotErr := s.taskValue(task)
		if !bytes.Equal(gotVal, wantVal) || (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("%+v encodes as\n%s (%v)\ns.encode writes\n%s (%v)", task, gotVal, gotErr, wantVal, wantErr)
		}
		if wantErr == nil && bytes.Equal(appendTask(nil, task), want) {
			fast++
		}
	}
	if fast < 5000 {
		t.Fatalf("%d of 20000 tasks were written without encoding/json", fast)
	}
}
