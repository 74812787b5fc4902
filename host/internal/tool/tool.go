// Package tool opens the tool sources a pipeline declares ([tools.NAME]):
// MCP servers over stdio or streamable HTTP (through the official MCP Go
// SDK) and tool plugins (sdk.Tool over any transport). It lists their
// tools, checks a call's arguments against the tool's JSON Schema, runs
// calls with the source's deadline and result size limit, and says what a
// tool's annotations and the pipeline imply for replay, crash recovery and
// confirmation (Policy).
//
// It must not record, replay or judge calls: the run engine answers calls
// from recordings and applies the strategy; this package only reaches the
// tools. A Set connects to a source on first use, so a replay that answers
// every call from recordings never starts a server.
package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sextant-dev/sextant/host/internal/pipeline"
	"github.com/sextant-dev/sextant/host/internal/readfile"
	"github.com/sextant-dev/sextant/host/internal/schema"
	"github.com/sextant-dev/sextant/sdk"
)

// Source is one open tool source.
type Source interface {
	// List returns the source's tools.
	List(ctx context.Context) ([]sdk.ToolSpec, error)
	// Call runs one tool. A failure of the tool itself is a result with
	// IsError; an error means the call could not be made or answered.
	Call(ctx context.Context, name string, args json.RawMessage) (*sdk.ToolResult, error)
	// Close stops the source (a stdio server's process ends).
	Close() error
}

// PluginOpener opens the tool plugin called name; close releases it.
type PluginOpener func(ctx context.Context, name string) (t sdk.Tool, close func(context.Context) error, err error)

// Set is a pipeline's tool sources, each connected on first use and kept
// open until Close. It is safe for concurrent use.
type Set struct {
	sources map[string]pipeline.ToolSource
	dir     string
	file    string // "NAME: ", the pipeline file's name, for errors
	open    PluginOpener
	getenv  func(string) (string, bool)
	logger  *slog.Logger

	mu    sync.Mutex
	conns map[string]*conn
}

// conn is one source, opened once.
type conn struct {
	once  sync.Once
	src   Source
	specs []sdk.ToolSpec
	err   error
	// schemas are the tools' argument checkers, by tool name.
	schemas map[string]*Schema
}

// Options tune NewSet.
type Options struct {
	// OpenPlugin opens tool plugins; without it a plugin source fails
	// when first used.
	OpenPlugin PluginOpener
	// Getenv reads the variables that env and headers name; nil means
	// os.LookupEnv.
	Getenv func(string) (string, bool)
	Logger *slog.Logger
}

// NewSet returns the tool sources of p, none of them connected yet.
func NewSet(p *pipeline.Pipeline, opts Options) *Set {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Getenv == nil {
		opts.Getenv = lookupEnv
	}
	file := ""
	if p.File != "" {
		file = filepath.Base(p.File) + ": "
	}
	return &Set{sources: p.Tools, dir: p.Dir, file: file, open: opts.OpenPlugin, getenv: opts.Getenv,
		logger: opts.Logger, conns: map[string]*conn{}}
}

// Names lists the set's sources in order.
func (s *Set) Names() []string {
	out := make([]string, 0, len(s.sources))
	for k := range s.sources {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Config returns the source's [tools.NAME] block.
func (s *Set) Config(source string) (pipeline.ToolSource, bool) {
	c, ok := s.sources[source]
	return c, ok
}

// Start connects to the named sources and lists their tools, so that a
// source that cannot start fails the run before anything runs. Every
// source's error is reported.
func (s *Set) Start(ctx context.Context, names ...string) error {
	var errs []error
	for _, n := range names {
		if _, err := s.List(ctx, n); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// List returns the tools of the named source, connecting to it first if
// needed. The list is read once per Set.
func (s *Set) List(ctx context.Context, source string) ([]sdk.ToolSpec, error) {
	c, err := s.conn(ctx, source)
	if err != nil {
		return nil, err
	}
	return c.specs, nil
}

func (s *Set) conn(ctx context.Context, source string) (*conn, error) {
	cfg, ok := s.sources[source]
	if !ok {
		return nil, fmt.Errorf("tools.%s: no such tool source", source)
	}
	s.mu.Lock()
	c, ok := s.conns[source]
	if !ok {
		c = &conn{}
		s.conns[source] = c
	}
	s.mu.Unlock()
	c.once.Do(func() {
		if c.err = s.checkEnv(source, cfg); c.err != nil {
			return
		}
		tctx, cancel := context.WithTimeout(ctx, timeout(cfg))
		defer cancel()
		c.src, c.err = s.dial(tctx, source, cfg)
		if c.err != nil {
			c.err = fmt.Errorf("tools.%s: start: %w", source, c.err)
			return
		}
		specs, err := c.src.List(tctx)
		if err == nil {
			err = uniqueNames(specs)
		}
		if err != nil {
			c.err = fmt.Errorf("tools.%s: list tools: %w", source, err)
			c.src.Close()
			c.src = nil
			return
		}
		c.specs, c.schemas = specs, map[string]*Schema{}
		for _, sp := range specs {
			c.schemas[sp.Name] = Compile(sp.InputSchema)
		}
	})
	return c, c.err
}

// CheckEnv reports every variable the env and headers of p's tool
// sources name that is unset, as an unset api_key_env is reported:
// invalid input, at the pipeline file, found before anything starts.
// getenv nil means os.LookupEnv.
func CheckEnv(p *pipeline.Pipeline, getenv func(string) (string, bool)) error {
	s := NewSet(p, Options{Getenv: getenv})
	var errs []error
	for _, n := range s.Names() {
		errs = append(errs, s.checkEnv(n, s.sources[n]))
	}
	return errors.Join(errs...)
}

// checkEnv is CheckEnv for one source.
func (s *Set) checkEnv(source string, cfg pipeline.ToolSource) error {
	var errs []error
	for i, e := range cfg.Env {
		if !strings.Contains(e, "=") {
			if _, ok := s.getenv(e); !ok {
				errs = append(errs, sdk.Errorf(sdk.CodeInvalid, "%stools.%s.env[%d]: environment variable %s is not set", s.file, source, i, e))
			}
		}
	}
	for _, h := range sortedKeys(cfg.Headers) {
		if v, ok := s.getenv(cfg.Headers[h]); !ok || v == "" {
			errs = append(errs, sdk.Errorf(sdk.CodeInvalid, "%stools.%s.headers.%s: environment variable %s is not set", s.file, source, h, cfg.Headers[h]))
		}
	}
	return errors.Join(errs...)
}

// uniqueNames refuses a tool list that names one tool twice: the model
// would be offered two tools of one name (providers refuse such a
// request) and a call by that name would reach whichever the source picks.
func uniqueNames(specs []sdk.ToolSpec) error {
	seen := make(map[string]bool, len(specs))
	for _, sp := range specs {
		if seen[sp.Name] {
			return fmt.Errorf("the source lists tool %q twice", sp.Name)
		}
		seen[sp.Name] = true
	}
	return nil
}

func (s *Set) dial(ctx context.Context, name string, cfg pipeline.ToolSource) (Source, error) {
	switch cfg.Transport() {
	case pipeline.ToolStdio:
		src, err := dialStdio(ctx, name, cfg, s.dir, s.getenv, s.logger)
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return src, nil
	case pipeline.ToolHTTP:
		src, err := dialHTTP(ctx, cfg, s.getenv)
		if err != nil {
			return nil, err
		}
		return src, nil
	case pipeline.ToolPlugin:
		if s.open == nil {
			return nil, fmt.Errorf("tool plugin %q: no plugin registry", cfg.Use)
		}
		config, err := s.pluginConfig(cfg)
		if err != nil {
			return nil, err
		}
		t, closeFn, err := s.open(ctx, cfg.Use)
		if err != nil {
			return nil, err
		}
		return &pluginSource{t: t, close: closeFn, config: config}, nil
	}
	return nil, fmt.Errorf("unknown transport")
}

// MaxData bounds a plugin source's data file, which travels with every
// call: a table or document, not a database.
const MaxData = 16 << 20

// pluginConfig is the config sent with a plugin source's calls: its block's
// config and, when it names a data file, that file's text and path. The
// file is read once, when the source starts.
func (s *Set) pluginConfig(cfg pipeline.ToolSource) (map[string]any, error) {
	if cfg.Data == "" {
		return cfg.Config, nil
	}
	path := filepath.FromSlash(cfg.Data)
	if !filepath.IsAbs(path) {
		path = filepath.Join(s.dir, path)
	}
	b, err := readfile.Read(path, MaxData)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	out := make(map[string]any, len(cfg.Config)+2)
	for k, v := range cfg.Config {
		out[k] = v
	}
	out[sdk.ToolConfigData] = string(b)
	out[sdk.ToolConfigDataFile] = filepath.ToSlash(cfg.Data)
	return out, nil
}

// ErrBadArguments marks a call whose arguments fail the tool's schema.
var ErrBadArguments = errors.New("arguments do not match the tool's input schema")

// ErrTooLarge marks a result over the source's max_result.
var ErrTooLarge = errors.New("result over max_result")

// Check validates a call's arguments against the tool's input schema:
// an error matching ErrBadArguments says what is wrong, in words the
// model can act on.
func (s *Set) Check(ctx context.Context, source, tool string, args json.RawMessage) error {
	c, err := s.conn(ctx, source)
	if err != nil {
		return err
	}
	return c.schemas[tool].Check(args)
}

// Call runs the source's tool with the source's deadline, refusing a
// result over its max_result (ErrTooLarge).
func (s *Set) Call(ctx context.Context, source, tool string, args json.RawMessage) (*sdk.ToolResult, error) {
	c, err := s.conn(ctx, source)
	if err != nil {
		return nil, err
	}
	cfg := s.sources[source]
	tctx, cancel := context.WithTimeout(ctx, timeout(cfg))
	defer cancel()
	res, err := c.src.Call(tctx, tool, args)
	if err != nil {
		if tctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			return nil, fmt.Errorf("tools.%s: %s: no answer within %s (timeout): %w", source, tool, timeout(cfg), err)
		}
		return nil, fmt.Errorf("tools.%s: %s: %w", source, tool, err)
	}
	if res == nil {
		return nil, fmt.Errorf("tools.%s: %s: no result", source, tool)
	}
	if max := maxResult(cfg); uint64(len(res.Content)+len(res.Structured)) > max {
		return nil, fmt.Errorf("tools.%s: %s: %w: %d bytes, max_result %d", source, tool, ErrTooLarge, len(res.Content)+len(res.Structured), max)
	}
	if len(res.Structured) > 0 && !json.Valid(res.Structured) {
		return nil, fmt.Errorf("tools.%s: %s: structured result is not JSON", source, tool)
	}
	return res, nil
}

// Close stops every source that was started.
func (s *Set) Close() error {
	s.mu.Lock()
	conns := s.conns
	s.conns = map[string]*conn{}
	s.mu.Unlock()
	var errs []error
	for _, n := range sortedKeys(conns) {
		if c := conns[n]; c.src != nil {
			if err := c.src.Close(); err != nil {
				errs = append(errs, fmt.Errorf("tools.%s: close: %w", n, err))
			}
		}
	}
	return errors.Join(errs...)
}

func timeout(cfg pipeline.ToolSource) time.Duration {
	if d := cfg.Timeout.Std(); d > 0 {
		return d
	}
	return 30 * time.Second
}

// maxResult is the source's max_result in bytes.
func maxResult(cfg pipeline.ToolSource) uint64 {
	if n, err := schema.ParseSize(cfg.MaxResult); err == nil && n > 0 {
		return n
	}
	return 1 << 20
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
