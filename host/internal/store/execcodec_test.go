package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// randExecution draws an execution: every field optional but the ids,
// strings that need escaping (and \b, \f, which encoding/json writes
// short), times of any zone and of the years encoding/json refuses.
func randExecution(rng *rand.Rand) *Execution {
	str := func() string {
		switch rng.IntN(4) {
		case 0:
			return ""
		case 1:
			return randString(rng) + []string{"\b", "\f", "x"}[rng.IntN(3)]
		}
		return fmt.Sprintf("plain-%d", rng.IntN(1000))
	}
	tm := func() time.Time {
		switch rng.IntN(12) {
		case 0:
			return time.Time{}
		case 1:
			return randTime(rng).In(time.FixedZone("east", 5*3600+1800))
		case 2:
			return time.Date(10000+rng.IntN(10), 1, 1, 0, 0, 0, rng.IntN(1e9), time.UTC)
		}
		return randTime(rng)
	}
	e := &Execution{Task: fmt.Sprintf("task-%d", rng.IntN(100)), ID: fmt.Sprintf("exec-%d", rng.IntN(100)),
		Strategy: StrategyRef{Name: str(), Version: str(), Hash: str()}, Mode: str(), Status: Status(str()),
		TraceID: str(), Started: tm(), Ended: tm(), Error: str()}
	if rng.IntN(3) == 0 {
		e.Task, e.ID = randString(rng), randString(rng)
	}
	if rng.IntN(2) == 0 {
		e.Mode = []string{"live", "replay"}[rng.IntN(2)]
	}
	if rng.IntN(2) == 0 {
		e.Status = []Status{StatusRunning, StatusCompleted, StatusFailed, StatusInterrupted}[rng.IntN(4)]
	}
	for range rng.IntN(4) {
		e.Trace = append(e.Trace, str())
	}
	return e
}

// TestExecutionCodec: the hand-written execution encoding is
// encoding/json's, and decodeExecution reads what decode reads (the same
// execution, or an error where decode has one, with its text) for
// encoded executions and for every kind of damage to them; it reads
// those it writes itself without encoding/json.
func TestExecutionCodec(t *testing.T) {
	s := openTest(t)
	rng := rand.New(rand.NewPCG(37, 41))
	key := execKey("t1", "e1")
	junk := []byte{'"', '\\', ',', '}', '{', '[', ']', '0', '9', 'Z', '.', ':', ' ', 0x01, 0xff, 'n'}
	fast := 0
	check := func(val []byte, task, id string) {
		t.Helper()
		var got, want Execution
		gotErr, wantErr := decodeExecution(key, val, &got, task, id), decode(key, val, &want)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q decodes as %+v (%v), decode reads %+v (%v)", val, got, gotErr, want, wantErr)
		}
		// Without a key, the execution's own (execKey) in its errors;
		// and from a string, as the journal holds it.
		var own, text Execution
		if err := decodeExecution(nil, val, &own, "t1", "e1"); fmt.Sprint(err) != fmt.Sprint(wantErr) || !reflect.DeepEqual(own, want) {
			t.Fatalf("%q decodes without a key as %+v (%v), decode reads %+v (%v)", val, own, err, want, wantErr)
		}
		if err := decodeExecutionText(string(val), &text, "t1", "e1"); fmt.Sprint(err) != fmt.Sprint(wantErr) || !reflect.DeepEqual(text, want) {
			t.Fatalf("%q decodes from a string as %+v (%v), decode reads %+v (%v)", val, text, err, want, wantErr)
		}
	}
	for range 20000 {
		e := randExecution(rng)
		want, wantErr := s.encode(e)
		got, gotErr := s.encodeExecution(e)
		if !bytes.Equal(got, want) || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("%+v encodes as\n%s (%v)\nencoding/json writes\n%s (%v)", e, got, gotErr, want, wantErr)
		}
		if wantErr != nil {
			continue
		}
		if js, err := json.Marshal(e); err == nil && plainUTC(e.Started) && (e.Ended.IsZero() || plainUTC(e.Ended)) {
			if own := appendExecution(nil, e); !bytes.Equal(own, js) {
				t.Fatalf("%+v appends as\n%s\nencoding/json writes\n%s", e, own, js)
			}
			var ex Execution
			if d := (execDecoder{b: string(js)}); d.execution(&ex, e.Task, e.ID) && len(d.b) == 0 {
				fast++
			}
		}
		check(want, e.Task, e.ID)
		for range 4 {
			val := bytes.Clone(want)
			i := 1 + rng.IntN(len(val)-1)
			switch rng.IntN(3) {
			case 0:
				val = append(val[:i], val[i+1:]...)
			case 1:
				val = append(val[:i], append([]byte{junk[rng.IntN(len(junk))]}, val[i:]...)...)
			default:
				val[i] = junk[rng.IntN(len(junk))]
			}
			check(val, e.Task, e.ID)
		}
	}
	if fast < 1000 {
		t.Fatalf("only %d executions were read without encoding/json", fast)
	}
}

// TestExecutionCodecAllocs: a run's end decodes and encodes its
// execution with an allocation for each string the store does not know
// already (its trace id, strategy's name and hash), one for the
// execution (which the caller's update may keep) and one for the value.
func TestExecutionCodecAllocs(t *testing.T) {
	s := openTest(t)
	e := &Execution{Task: "t1", ID: "01KH0Z6X20ABCDEFGHJKMNPQRS", Strategy: StrategyRef{Name: "classify", Hash: "9f86d081884c7d65"},
		Status: StatusRunning, TraceID: TraceIDFor("t1", "01KH0Z6X20ABCDEFGHJKMNPQRS"), Started: t0}
	val, err := s.encodeExecution(e)
	must(t, err)
	key := execKey(e.Task, e.ID)
	if n := testing.AllocsPerRun(100, func() {
		var ex Execution
		must(t, decodeExecution(key, val, &ex, "t1", "01KH0Z6X20ABCDEFGHJKMNPQRS"))
		ex.Status, ex.Ended, ex.Trace = StatusCompleted, t0.Add(time.Second), nil
		if _, err := s.encodeExecution(&ex); err != nil {
			t.Fatal(err)
		}
	}); n > 5 {
		t.Fatalf("%v allocations", n)
	}
}
