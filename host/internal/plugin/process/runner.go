package process

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hashicorp/go-plugin/runner"

	"github.com/sextant-dev/sextant/sdk/rpc"
)

// procRunner is go-plugin's runner.Runner for one child. go-plugin's own
// command runner cannot do what the sandbox needs — it hands the child the
// host's stdin, gives no hook between fork and handshake for the memory
// limit, and reaps the child only after its pipes close — so this one does
// the exec itself: checksum, scrubbed environment, /dev/null stdin, own
// process group, parent-death signal, rlimit, and its own reaping.
type procRunner struct {
	p      *Plugin
	out    *output
	env    []string // go-plugin's variables: magic cookie, ports, socket dir
	tmpDir string

	cmd            *exec.Cmd
	stdout, stderr io.ReadCloser
	// framesHost is the host's end of the frames control socket, until
	// the instance takes it after the handshake (nil: gRPC only).
	framesHost *os.File
	pid        int
	isStarted  atomic.Bool

	done    chan struct{} // closed once the child is reaped
	waitErr error
}

var _ runner.Runner = (*procRunner)(nil)

func newRunner(p *Plugin, out *output) *procRunner {
	return &procRunner{p: p, out: out, done: make(chan struct{})}
}

// prepare takes what go-plugin's RunnerFunc passes: a template command
// whose Env holds go-plugin's variables, and the directory for the socket.
func (r *procRunner) prepare(template *exec.Cmd, tmpDir string) *procRunner {
	r.env, r.tmpDir = template.Env, tmpDir
	return r
}

// Start implements runner.Runner.
func (r *procRunner) Start(context.Context) (err error) {
	p := r.p
	defer func() {
		if err != nil {
			os.RemoveAll(r.tmpDir) // go-plugin's Kill only removes it for a started runner
		}
	}()
	cmd := &exec.Cmd{
		Path: p.path,
		Args: p.cfg.Command,
		Dir:  p.cfg.Dir,
		Env:  environ(p.cfg.EnvAllow, p.cfg.Env, r.env),
		// Stdin nil: the child reads /dev/null, never the host's stdin.
	}
	if p.cfg.SHA256 != "" {
		// Hash and exec the same bytes: a private copy made while hashing
		// (RATIONALE.md), so a binary swapped at p.path after the check
		// never runs.
		exe, err := openVerified(p.path, r.tmpDir, p.cfg.SHA256, p.cfg.Name, p.log)
		if err != nil {
			return p.errorf(err, "%v", err)
		}
		defer exe.release() // the child holds its own reference once exec'd
		cmd.Path = exe.path
		if exe.extra != nil {
			cmd.ExtraFiles = []*os.File{exe.extra}
		}
	}
	if !p.cfg.ForceGRPC {
		// The frames control socket goes last among the child's extra
		// files (the verified binary, if any, must stay fd 3).
		host, child, perr := framesPair()
		if perr != nil {
			return p.errorf(perr, "start: %v", perr)
		}
		if child != nil {
			defer child.Close() // the child has its own copy once started
			cmd.ExtraFiles = append(cmd.ExtraFiles, child)
			cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%d", rpc.FramesEnv, 2+len(cmd.ExtraFiles)))
			r.framesHost = host
			defer func() {
				if err != nil { // Start's result
					host.Close()
					r.framesHost = nil
				}
			}()
		}
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return p.errorf(err, "start: %v", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return p.errorf(err, "start: %v", err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW

	ns := useNamespaces()
	cmd.SysProcAttr = sysProcAttr(ns)
	var startErr, limitErr error
	onSpawnThread(func() {
		startErr = cmd.Start()
		if startErr != nil && ns {
			// The same start without the namespace: if that works, the
			// namespace was what the kernel refused; the plugin then runs
			// contained as before (process group, parent-death signal).
			retry := cloneCmd(cmd, sysProcAttr(false))
			if startErr2 := retry.Start(); startErr2 == nil {
				namespacesRefused(startErr, p.log)
				cmd, startErr = retry, nil
			}
		}
		if startErr == nil {
			// Right after exec, before the child's runtime has done much:
			// there is no portable way to set an rlimit between fork and
			// exec from Go (RATIONALE.md).
			if limit := p.cfg.MemoryLimit; limit > 0 {
				limitErr = setMemoryLimit(cmd.Process.Pid, limit+RuntimeAllowance())
			}
		}
	})
	outW.Close()
	errW.Close()
	if startErr != nil {
		outR.Close()
		errR.Close()
		return p.errorf(startErr, "start: %v", startErr)
	}
	r.cmd, r.pid = cmd, cmd.Process.Pid
	r.stdout, r.stderr = outR, r.out.watchEOF(errR)
	r.isStarted.Store(true)
	go func() {
		r.waitErr = cmd.Wait()
		close(r.done)
	}()
	if limitErr != nil {
		r.Kill(context.Background())
		<-r.done
		outR.Close()
		errR.Close()
		return p.errorf(limitErr, "set memory limit: %v", limitErr)
	}
	return nil
}

// cloneCmd returns an unstarted copy of cmd with attr: an exec.Cmd cannot
// be started twice.
func cloneCmd(cmd *exec.Cmd, attr *syscall.SysProcAttr) *exec.Cmd {
	return &exec.Cmd{Path: cmd.Path, Args: cmd.Args, Dir: cmd.Dir, Env: cmd.Env,
		Stdout: cmd.Stdout, Stderr: cmd.Stderr, ExtraFiles: cmd.ExtraFiles, SysProcAttr: attr}
}

func (r *procRunner) started() bool { return r.isStarted.Load() }

// state describes how the child ended; call after done is closed.
func (r *procRunner) state() string {
	if r.cmd.ProcessState == nil {
		return fmt.Sprint(r.waitErr)
	}
	return r.cmd.ProcessState.String()
}

// Wait implements runner.AttachedRunner.
func (r *procRunner) Wait(context.Context) error {
	if !r.started() {
		return nil
	}
	<-r.done
	return r.waitErr
}

// Kill implements runner.AttachedRunner: SIGKILL to the child's process
// group, so that its own children go too.
func (r *procRunner) Kill(context.Context) error {
	if !r.started() {
		return nil
	}
	return killTree(r.cmd.Process)
}

// Stdout implements runner.Runner.
func (r *procRunner) Stdout() io.ReadCloser { return r.stdout }

// Stderr implements runner.Runner.
func (r *procRunner) Stderr() io.ReadCloser { return r.stderr }

// Name implements runner.Runner.
func (r *procRunner) Name() string { return r.p.path }

// ID implements runner.AttachedRunner; "" until started, as go-plugin expects.
func (r *procRunner) ID() string {
	if !r.started() {
		return ""
	}
	return strconv.Itoa(r.pid)
}

// Diagnose implements runner.Runner; startError says what went wrong instead.
func (r *procRunner) Diagnose(context.Context) string { return "" }

// PluginToHost implements runner.AddrTranslator: same host, same addresses.
func (r *procRunner) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

// HostToPlugin implements runner.AddrTranslator.
func (r *procRunner) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}

// environ builds the child's environment: the allowed host variables, the
// host's additions, then go-plugin's own (last, so nothing overrides them).
func environ(allow, extra, goplugin []string) []string {
	var env []string
	for _, name := range allow {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	env = append(env, extra...)
	for _, kv := range goplugin {
		// go-plugin copies the host's environment unless SkipHostEnv;
		// keep only its own variables whatever it did.
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "PLUGIN_") || k == rpc.Handshake.MagicCookieKey {
			env = append(env, kv)
		}
	}
	return env
}

var (
	spawnOnce sync.Once
	spawnCh   chan func()
)

// onSpawnThread runs f on one OS thread that lives as long as the host.
// Linux sends a child's parent-death signal when the thread that forked it
// exits, and the Go runtime ends a thread when a goroutine locked to it
// returns; a dedicated locked thread that never returns is never ended.
func onSpawnThread(f func()) {
	spawnOnce.Do(func() {
		spawnCh = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked: the thread must not be reused or ended
			for f := range spawnCh {
				f()
			}
		}()
	})
	done := make(chan struct{})
	spawnCh <- func() { defer close(done); f() }
	<-done
}
