package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sextant-dev/sextant/sdk"
	"github.com/sextant-dev/sextant/sdk/rpc"
)

// instance is one running child and its go-plugin client. A fault retires
// it; the next call starts a new one.
type instance struct {
	p      *Plugin
	client *goplugin.Client
	rpc    *rpc.Client
	run    *procRunner
	out    *output
	// fr carries calls when the child serves frames; nil means gRPC.
	fr *frames

	killOnce sync.Once
}

// exitWait bounds how long a failed call waits for the child's exit status
// before calling the connection lost instead.
const exitWait = 2 * time.Second

// start runs one child up to a dispensed gRPC client.
func (p *Plugin) start(ctx context.Context) (*instance, error) {
	in := &instance{p: p, out: newOutput(p.log, p.cfg.MemoryLimit > 0)}
	in.run = newRunner(p, in.out)
	in.client = goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  rpc.Handshake,
		Plugins:          goplugin.PluginSet{rpc.PluginName: &rpc.GRPCPlugin{}},
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		// The runner verifies the checksum, scrubs the environment and
		// applies the limits; see RATIONALE.md for why not SecureConfig.
		RunnerFunc: func(_ hclog.Logger, cmd *exec.Cmd, tmpDir string) (runner.Runner, error) {
			return in.run.prepare(cmd, tmpDir), nil
		},
		SkipHostEnv:  true, // cmd.Env then holds only go-plugin's own variables
		StartTimeout: p.cfg.StartTimeout,
		Stderr:       in.out.raw(),    // the child's fd 2: runtime panics, logs
		SyncStderr:   in.out.synced(), // os.Stderr after sdk.Main started serving
		SyncStdout:   io.Discard,      // stdout after the handshake is not protocol
		Logger:       newHCLogger(p.log, p.path),
		GRPCDialOptions: []grpc.DialOption{grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(rpc.MaxMessage), grpc.MaxCallSendMsgSize(rpc.MaxMessage))},
	})

	started := make(chan error, 1)
	go func() {
		_, err := in.client.Start()
		started <- err
	}()
	var err error
	select {
	case err = <-started:
	case <-ctx.Done():
		// Kill until client.Start gives up: the child may not exist yet.
		for waiting := true; waiting; {
			in.run.Kill(context.Background())
			select {
			case <-started:
				waiting = false
			case <-time.After(50 * time.Millisecond):
			}
		}
		in.client.Kill()
		return nil, p.errorf(ctx.Err(), "start: %v", ctx.Err())
	}
	if err != nil {
		err = in.startError(err)
		in.client.Kill()
		return nil, err
	}

	cp, err := in.client.Client()
	if err == nil {
		var raw any
		raw, err = cp.Dispense(rpc.PluginName)
		if err == nil {
			in.rpc = raw.(*rpc.Client)
		}
	}
	if err == nil && in.run.framesHost != nil {
		in.fr, err = openFrames(in.run.framesHost)
		in.run.framesHost = nil
	}
	if err != nil {
		in.kill()
		return nil, p.errorf(err, "connect: %v", err)
	}
	p.log.Info("plugin started", "pid", in.run.pid, "transport", in.transport())
	return in, nil
}

// startError turns go-plugin's start errors, some of them paragraphs, into
// one line that says what the plugin did.
func (in *instance) startError(err error) error {
	p := in.p
	var te *transportError
	if errors.As(err, &te) { // from our runner: checksum, exec
		return err
	}
	msg := err.Error()
	const unrecognized = "Unrecognized remote plugin message: "
	if line, ok := strings.CutPrefix(msg, unrecognized); ok {
		line, _, _ = strings.Cut(line, "\n")
		if line != "" {
			return p.errorf(err, "handshake failed: unexpected line on stdout: %s", quote(line, 60))
		}
	}
	if strings.Contains(msg, "timeout while waiting for plugin to start") {
		// go-plugin has killed it already.
		return p.errorf(context.DeadlineExceeded, "handshake failed: no handshake line within %s", p.cfg.StartTimeout)
	}
	if in.run.started() && in.waitExit(exitWait) {
		fault := in.exitFault() + " before the handshake"
		if l := in.out.lastWords(); l != "" {
			fault += ": " + l
		}
		return p.errorf(ErrExited, "%s", fault)
	}
	return p.errorf(err, "handshake failed: %s", msg)
}

// callFault classifies a failed call, retires the child when it is dead or
// wedged, and returns the one-line error.
func (p *Plugin) callFault(ctx, cctx context.Context, in *instance, request []byte, err error) error {
	m := method(request)
	code := status.Code(err)
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	switch {
	case closed:
		return p.errorf(ErrClosed, "closed during %s", m)
	case errors.Is(cctx.Err(), context.DeadlineExceeded) || code == codes.DeadlineExceeded:
		// The plugin kept the call past its deadline. A Go plugin would have
		// seen the cancellation; one that did not is looping or stuck, and
		// killing it is the only way to get the CPU and memory back.
		// Whose deadline: the server may report it a moment before the
		// client's own timer fires, so compare deadlines, not errors.
		var fault string
		if d, ok := ctx.Deadline(); ok && !d.After(deadline(cctx)) {
			fault = fmt.Sprintf("%s: %v (process killed)", m, context.DeadlineExceeded)
		} else {
			fault = fmt.Sprintf("%s: no answer within %s (process killed)", m, p.cfg.CallTimeout)
		}
		p.log.Warn("plugin fault", "fault", fault)
		p.retire(in, fault)
		return p.errorf(context.DeadlineExceeded, "%s", fault)
	case errors.Is(cctx.Err(), context.Canceled) || code == codes.Canceled:
		// The caller gave up; gRPC told the plugin. Not the plugin's fault.
		return p.errorf(context.Canceled, "%s: %v", m, context.Canceled)
	case code == codes.ResourceExhausted:
		// The request was checked before sending, so it is the response.
		desc := status.Convert(err).Message()
		if sm := tooLargeRE.FindStringSubmatch(desc); sm != nil {
			return p.errorf(err, "%s: response of %s bytes is over the %s message limit", m, sm[1], size(rpc.MaxMessage))
		}
		return p.errorf(err, "%s: response over the %s message limit (%s)", m, size(rpc.MaxMessage), desc)
	}
	wait := time.Duration(0)
	if code == codes.Unavailable {
		wait = exitWait
	}
	if in.waitExit(wait) {
		fault := in.exitFault() + " during " + m
		if l := in.out.crashLine(); l != "" && !in.out.oom() {
			fault += ": " + l
		}
		p.log.Warn("plugin fault", "fault", fault)
		p.retire(in, fault)
		return p.errorf(ErrExited, "%s", fault)
	}
	desc := status.Convert(err).Message()
	if code == codes.Unavailable {
		fault := fmt.Sprintf("%s: connection lost (%s, process killed)", m, desc)
		p.log.Warn("plugin fault", "fault", fault)
		p.retire(in, fault)
		return p.errorf(err, "%s", fault)
	}
	return p.errorf(err, "%s: %s: %s", m, strings.ToLower(code.String()), desc)
}

func deadline(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// tooLargeRE reads the size out of gRPC's "message larger than max (N vs. M)".
var tooLargeRE = regexp.MustCompile(`larger than max \((\d+) vs\. \d+\)`)

// waitExit reports whether the child has exited, waiting up to d for it.
func (in *instance) waitExit(d time.Duration) bool {
	if !in.run.started() {
		return false
	}
	if d <= 0 {
		return in.exited()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-in.run.done:
		return true
	case <-t.C:
		return false
	}
}

func (in *instance) exited() bool {
	select {
	case <-in.run.done:
		return true
	default:
		return false
	}
}

// exitFault describes how the child died. It waits briefly for the rest of
// its stderr so that a runtime's last words are in.
func (in *instance) exitFault() string {
	<-in.run.done
	in.out.waitEOF(exitWait)
	in.out.flush()
	state := in.run.state()
	if in.out.oom() {
		limit := "no limit"
		if in.p.cfg.MemoryLimit > 0 {
			limit = "limit " + size(in.p.cfg.MemoryLimit)
		}
		if in.p.cfg.MemoryLimit > 0 {
			limit += "; raise [requests] memory in its plugin.toml"
		}
		return fmt.Sprintf("out of memory (%s): process exited (%s)", limit, state)
	}
	return fmt.Sprintf("process exited (%s)", state)
}

// kill ends the child now (the whole process group) and releases the
// go-plugin client.
func (in *instance) kill() {
	in.killOnce.Do(func() {
		if in.fr != nil {
			in.fr.close()
		}
		in.run.Kill(context.Background())
		in.client.Kill()
	})
}

// transport names how calls reach the child, for the log.
func (in *instance) transport() string {
	if in.fr != nil {
		return "frames"
	}
	return "grpc"
}

// method reads the method name out of a request envelope, for messages.
func method(request []byte) string {
	if m := sdk.EnvelopeMethod(request); m != "" {
		return m
	}
	return "call"
}

// quote quotes s for a message, cut to about n characters.
func quote(s string, n int) string {
	s = strings.ToValidUTF8(s, "?")
	if r := []rune(s); len(r) > n {
		return fmt.Sprintf("%q…", string(r[:n]))
	}
	return fmt.Sprintf("%q", s)
}
