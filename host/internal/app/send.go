package app

import (
	"errors"

	"github.com/sextant-dev/sextant/host/internal/run"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// MessageDelivery checks sextant send's arguments and builds the message
// delivery: a message name, and the task it goes to or its correlation
// key (a key alone is looked up in a store, which Temporal, onTemporal,
// cannot do). A mistake is a *UsageError.
func MessageDelivery(task, message, key string, onTemporal bool, vars map[string]any) (run.Delivery, error) {
	switch {
	case message == "":
		return run.Delivery{}, &UsageError{errors.New("--message: name the message to send")}
	case task == "" && key == "":
		return run.Delivery{}, &UsageError{errors.New("name the TASK to send to, or its correlation --key")}
	case task == "" && onTemporal:
		return run.Delivery{}, &UsageError{errors.New("with --temporal, name the TASK to send to")}
	}
	return run.Delivery{Kind: store.WaitMessage, Name: message, Vars: vars, Key: key}, nil
}
