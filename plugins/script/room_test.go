package script

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/sextant-dev/sextant/sdk"
)

// TestAnswerRoom: calls made at once, many more than a block of
// responses or a piece of text holds, each answer its own and as the
// rules say; a caller changing its response changes no other, and what
// was handed out stays as it was while later calls fill new blocks and
// pieces. A short answer shares its allocations (under one a call, the
// submatches' slice aside); a long one is whole.
func TestAnswerRoom(t *testing.T) {
	const rules = `
[[rule]]
match = 'Step (\d+)'
reply = "answer {{ index .match 1 }} on {{ .input.topic }}"
`
	long := strings.Repeat("t", 2*answerTextMax)
	p := New()
	request := func(n int, topic string) *sdk.ChatRequest {
		return &sdk.ChatRequest{Messages: []sdk.Message{{Role: "user", Content: fmt.Sprintf("Step %d", n)}},
			Vars: map[string]any{"input": map[string]any{"topic": topic}}, Config: map[string]any{ConfigRules: rules}}
	}
	call := func(req *sdk.ChatRequest) *sdk.ChatResponse {
		resp, err := p.Chat(t.Context(), req)
		if err != nil {
			t.Error(err)
			return &sdk.ChatResponse{}
		}
		return resp
	}
	const calls = 5 * answerBlock
	resps := make([]*sdk.ChatResponse, 4*calls)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range calls {
				n := g*calls + i
				topic := "cats"
				if n%7 == 0 {
					topic = long
				}
				resps[n] = call(request(n, topic))
				resps[n].ID = fmt.Sprint(n) // the caller's to change
			}
		})
	}
	wg.Wait()
	for n, r := range resps {
		want := fmt.Sprintf("answer %d on cats", n)
		if n%7 == 0 {
			want = fmt.Sprintf("answer %d on %s", n, long)
		}
		if r.Text != want || r.ID != fmt.Sprint(n) || r.Model != "script" || r.FinishReason != "stop" ||
			r.Usage.OutputTokens != (len(want)+3)/4 {
			t.Fatalf("call %d answered %+v, want text %q", n, r, want)
		}
	}
	if raceEnabled {
		return // the race detector allocates on its own
	}
	req := request(12345, "cats")
	if a := testing.AllocsPerRun(100, func() { call(req) }); a > 1 {
		t.Errorf("a short answer takes %v allocations", a)
	}
}
