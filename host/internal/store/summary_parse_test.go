package store

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"
)

// The direct parsers of the derived values agree with encoding/json on
// every shape the store writes, and decline anything else.
func TestSummaryParsers(t *testing.T) {
	s := openTest(t)
	for _, tv := range []sumTaskVal{
		{Status: StatusCompleted, Pipeline: "p1", Version: "1.0"},
		{Status: StatusRunning, Pipeline: "mail triage"},
		{Status: StatusFailed, Pipeline: "a<b>&c", Version: "x"}, // escaped by encoding/json
		{Status: StatusWaiting, Pipeline: "ünïcode \u2028", Version: "2"},
		{Status: StatusWaiting, Pipeline: `q"uote\`, Version: "2"},
	} {
		val, err := s.encode(tv)
		must(t, err)
		var want sumTaskVal
		must(t, decode([]byte("k"), val, &want))
		if got, ok := parseSumTask(val[1:]); ok && got != want {
			t.Errorf("task %q: parsed %+v, want %+v", val, got, want)
		} else if !ok && tv.Pipeline == "p1" {
			t.Errorf("task %q: not parsed", val)
		}
	}
	for _, e := range []Execution{
		{}, {Mode: "live"}, {Mode: "replay"},
		{Started: t0, Ended: t0.Add(1234567 * time.Nanosecond)},
		{Mode: "replay", Started: t0, Ended: t0.Add(time.Hour)},
		{Started: t0, Ended: t0.Add(-time.Second)},
	} {
		val := sumExecValue(&e)
		var want struct {
			Mode      string `json:"mode"`
			LatencyUS *int64 `json:"latency_us"`
		}
		must(t, decodeNumbers([]byte("k"), val, &want))
		mode, lat, ended, ok := parseSumExec(val[1:])
		if !ok || mode != want.Mode || ended != (want.LatencyUS != nil) || (ended && lat != time.Duration(*want.LatencyUS)*time.Microsecond) {
			t.Errorf("execution %q: parsed %q %v %v %v", val, mode, lat, ended, ok)
		}
	}
	for _, r := range []struct {
		n   int
		sum float64
	}{{1, 0.5}, {3, 0.1 + 0.7 - 0.3}, {2, -1e-300}, {7, 1e21}, {0, 0}} {
		val, err := sumRewardValue(r.n, r.sum)
		must(t, err)
		n, sum, ok := parseSumReward(val[1:])
		if !ok || n != r.n || sum != r.sum {
			t.Errorf("reward %q: parsed %d %v %v", val, n, sum, ok)
		}
	}
	calls := []CallUsage{{Seq: 1, Tokens: 47, CostUSD: 0.00012}, {Seq: math.MaxUint64, Tokens: -3, CostUSD: 1e-7}, {Seq: 9, Tokens: 0, CostUSD: 0.1 + 0.2}}
	for i := range len(calls) + 1 {
		val := sumUsageValue(calls[:i])
		got, ok := parseSumUsage(val[1:], nil)
		if !ok || len(got) != i || (i > 0 && !reflect.DeepEqual(got, calls[:i])) {
			t.Errorf("usage %q: parsed %+v %v", val, got, ok)
		}
	}
	// Anything else is declined, so encoding/json decides.
	for _, js := range []string{``, `{}x`, `{"status":"a","pipeline":"b"`, `{"n":1}`, `{"n":1,"sum":x}`, `{"calls":[[1,2]]}`,
		`{"calls":[[1,2,3]`, `{"calls":[[1,2,3][4,5,6]]}`, `{"latency_us":1.5}`, `{"mode":"a\u0062"}`, ` {"n":1,"sum":2}`} {
		_, ok1 := parseSumTask([]byte(js))
		_, _, _, ok2 := parseSumExec([]byte(js))
		_, _, ok3 := parseSumReward([]byte(js))
		_, ok4 := parseSumUsage([]byte(js), nil)
		if ok1 || ok2 || ok3 || ok4 {
			t.Errorf("%q parsed: %v %v %v %v", js, ok1, ok2, ok3, ok4)
		}
	}
}

// TestTaskCreated: the created time read off a task record without
// decoding it is encoding/json's, whatever the fields before it hold (a
// "created" key nested in the input, escaped quotes, arrays); anything
// else is refused, never misread.
func TestTaskCreated(t *testing.T) {
	created := time.Date(2026, 3, 4, 5, 6, 7, 890, time.UTC)
	for _, tk := range []Task{
		{ID: "a", Pipeline: "p", Status: StatusCompleted, Created: created},
		{ID: "b", Pipeline: "p\"q\\\\", Input: json.RawMessage(`{"x":{"created":"2000-01-01T00:00:00Z","y":[1,{"z":"\"}"}],"n":null}}`),
			Truth: json.RawMessage(`[true,false,-1.5e3,"created"]`), Tags: []string{"created", "a,b"}, Status: StatusRunning, Created: created,
			Strategy: StrategyRef{Name: "s", Version: "1"}, Rules: map[string]string{"created": "h"}},
		{ID: "c", Pipeline: "p", Input: json.RawMessage(`{}`), Truth: json.RawMessage(`[]`), Status: StatusWaiting, Created: created.Add(-time.Hour)},
	} {
		js, err := json.Marshal(&tk)
		must(t, err)
		got, ok := taskCreated(js)
		if !ok || !got.Equal(tk.Created) {
			t.Errorf("%s: created %v %v, want %v", js, got, ok, tk.Created)
		}
	}
	for _, js := range []string{``, `[]`, `{"id":"a"}`, `{"id":"a","input":{"created":"2000-01-01T00:00:00Z"}}`,
		`{"id":"a","input":{"x":1}`, `{"id" : "a","created":"2026-03-04T05:06:07Z"}`, `{"input":[1,2,"created":"x"]}`} {
		if got, ok := taskCreated([]byte(js)); ok {
			t.Errorf("%s: read created %v", js, got)
		}
	}
}
