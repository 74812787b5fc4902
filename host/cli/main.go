// Package cli implements the sextant command line: one file per command
// family, all built on cobra. Main maps every failure to the exit codes of
// docs/design.md ("Exit codes") through ExitCode, the single place that decides them.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sextant-dev/sextant/host/internal/report"
	"github.com/sextant-dev/sextant/host/internal/store"
)

// Main runs sextant with the process's arguments and exits with its code.
func Main() {
	os.Exit(Run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// Run runs one sextant command line and returns the exit code.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	app := &app{stdin: stdin, stdout: stdout, stderr: stderr, args: args}
	root := app.rootCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil {
		printError(report.TermSafe(stderr), err, cmd)
	}
	return ExitCode(err)
}

// app holds what every command shares: streams and global flags.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	args           []string // the command line, for the hints that repeat it

	pluginDirs []string
	logLevel   string
	logger     *slog.Logger
	// otlpEndpoint is --otlp-endpoint: where run, resume and replay
	// export spans live ("" = $OTEL_EXPORTER_OTLP_ENDPOINT, or off).
	otlpEndpoint string
	// command is the command being run ("sextant import"), for errors
	// that name it.
	command string
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "sextant",
		Short:         "Run, record, replay and evolve AI agent pipelines",
		Long:          help("sextant"),
		Example:       help("sextant.example"),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			a.command = cmd.CommandPath()
			return a.setupLogging()
		},
	}
	root.PersistentFlags().StringArrayVar(&a.pluginDirs, "plugin-dir", nil, "directory holding plugin folders (repeatable; searched first)")
	root.PersistentFlags().StringVar(&a.logLevel, "log-level", envOr("SEXTANT_LOG", "warn"), "log level: debug, info, warn or error (env SEXTANT_LOG)")
	versionFlag(root)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr(err) })
	root.AddCommand(a.versionCommand(), a.pluginsCommand(), a.routineCommand(), a.runCommand(), a.resumeCommand(), a.sendCommand(), a.signalCommand(), a.runsCommand(), a.showCommand(), a.feedbackCommand(), a.exportCommand(), a.importCommand(), a.strategyCommand(), a.replayCommand(), a.gateCommand(), a.mergeCommand(), a.evolveCommand(), a.reviewCommand(), a.serveCommand(), a.workerCommand(), a.exprCommand(), a.initCommand(), a.docsCommand(), a.storeCommand())
	root.AddCommand(a.decideCommand())
	root.AddCommand(a.promoteCommand(), a.rollbackCommand())
	root.AddCommand(a.operateCommands()...)
	for _, c := range root.Commands() {
		requireExamples(c)
	}
	return root
}

func (a *app) setupLogging() error {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(a.logLevel)); err != nil {
		return usageErr(fmt.Errorf("--log-level: %q is not debug, info, warn or error", a.logLevel))
	}
	// Logs carry provider errors, which may quote a key: the handler
	// redacts every record, registered secrets included.
	a.logger = slog.New(store.NewLogHandler(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: lvl}), nil))
	slog.SetDefault(a.logger)
	return nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// requireExamples makes a missing example a start-up failure in tests
// rather than a silent gap in --help.
func requireExamples(c *cobra.Command) {
	if c.Runnable() && c.Example == "" {
		panic("cli: command " + c.CommandPath() + " has no example")
	}
	for _, sub := range c.Commands() {
		requireExamples(sub)
	}
}

// printError writes err to stderr: multi-line errors (lists of positioned
// problems) one problem per line, each already carrying its position.
// A usage mistake (ours or cobra's) ends with where to read the usage of
// the command it was made on.
func printError(w io.Writer, err error, cmd *cobra.Command) {
	msg := store.RedactSecrets(err.Error())
	if isUsage(err) {
		path := "sextant"
		if cmd != nil {
			path = cmd.CommandPath()
		}
		fmt.Fprintf(w, "sextant: %s\nRun '%s --help' for usage.\n", strings.TrimSpace(msg), path)
		return
	}
	if errors.Is(err, errSilent) {
		return
	}
	for _, line := range strings.Split(strings.TrimRight(msg, "\n"), "\n") {
		fmt.Fprintln(w, line)
	}
}
