package run

import (
	"fmt"
	"strings"

	"github.com/sextant-dev/sextant/sdk"
)

// MessageStart finds the start event of routine r that the message
// starts (by its message name, or its id), as a published message starts
// a Zeebe process instance; "" for no message. A message no start event
// waits for is invalid input naming the ones there are.
func MessageStart(r *sdk.Routine, message string) (string, error) {
	if message == "" {
		return "", nil
	}
	var names []string
	for _, id := range r.Starts {
		for _, n := range r.Nodes {
			if n.ID != id || n.Event == nil || n.Event.Type != sdk.EventMessage {
				continue
			}
			if n.Event.Name == message || n.ID == message {
				return n.ID, nil
			}
			names = append(names, fmt.Sprintf("%q", n.Event.Name))
		}
	}
	if len(names) == 0 {
		return "", invalidf("--message %q: the routine has no message start event", message)
	}
	return "", invalidf("--message %q: no message start event for it (the routine starts on %s)", message, strings.Join(names, ", "))
}

// invalidError is input the caller gave wrong (sdk.ErrInvalid: exit 2).
type invalidError struct{ msg string }

func (e *invalidError) Error() string        { return e.msg }
func (e *invalidError) Is(target error) bool { return target == sdk.ErrInvalid }

func invalidf(format string, args ...any) error {
	return &invalidError{fmt.Sprintf(format, args...)}
}
