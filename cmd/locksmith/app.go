package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/locksmith-go/locksmith/redlock"
)

// app holds what every subcommand shares: where output goes, how to reach
// the nodes, and the secrets to keep out of every message.
type app struct {
	stdout, stderr io.Writer
	conn           connOptions
	nodeTimeout    time.Duration
	verbose        bool
	errorCode      int
	secrets        []string
}

func newApp(stdout, stderr io.Writer) *app {
	return &app{stdout: stdout, stderr: stderr}
}

const rootHelp = `locksmith runs a command under a distributed lock held on a quorum of Redis
nodes (Redlock), shows who holds a lock, checks that the nodes are fit for
Redlock, and releases locks left behind.

Nodes are Redis URLs, given with --nodes (repeatable or comma-separated) or
LOCKSMITH_NODES (comma-separated):

  redis://[user[:password]@]host:port[/db]    plain TCP
  rediss://[user[:password]@]host:port[/db]   TLS (see the --tls-* flags)

Use an odd number of independent masters, 3 or 5. A password in a URL is
visible to ps; give it in LOCKSMITH_PASSWORD or --password-file instead (used
for every URL without a password of its own). Passwords never appear in
locksmith's output or errors.

Environment:
  LOCKSMITH_NODES      node URLs, comma-separated, when --nodes is not given
  LOCKSMITH_PASSWORD   password for URLs without one (--password-file wins)

`

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "locksmith [flags] COMMAND",
		Short:         "Run commands under a Redis quorum lock, inspect locks, check nodes",
		Long:          rootHelp + exitCodesHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return withCode(exitUsage, err)
	})
	pf := root.PersistentFlags()
	pf.StringSliceVar(&a.conn.urls, "nodes", nil, "node URLs, repeatable or comma-separated (default $LOCKSMITH_NODES)")
	pf.StringVar(&a.conn.tlsCA, "tls-ca", "", "PEM file of the CAs that sign the nodes' certificates (rediss://)")
	pf.StringVar(&a.conn.tlsCert, "tls-cert", "", "PEM file of a client certificate (rediss://)")
	pf.StringVar(&a.conn.tlsKey, "tls-key", "", "PEM file of the client certificate's key (rediss://)")
	pf.StringVar(&a.conn.tlsServerName, "tls-server-name", "", "name to verify in the nodes' certificates (default: the URL's host)")
	pf.StringVar(&a.conn.passwordFile, "password-file", "", "file holding the password for URLs without one (default $LOCKSMITH_PASSWORD)")
	pf.DurationVar(&a.nodeTimeout, "node-timeout", 0, "how long one node may take to answer one request (default 5% of --ttl, at most 1s)")
	pf.BoolVarP(&a.verbose, "verbose", "v", false, "say what locksmith does, on stderr")
	pf.IntVar(&a.errorCode, "error-exit-code", exitError, "exit code when no quorum can be reached or the configuration is wrong")
	commands := []*cobra.Command{a.runCommand(), a.statusCommand(), a.doctorCommand(), a.releaseCommand()}
	root.AddCommand(commands...)
	// Without a command, locksmith prints the usage where errors go and
	// fails, so that a script missing its command word does not pass.
	root.RunE = func(*cobra.Command, []string) error {
		fmt.Fprint(a.stderr, usage(commands))
		return withCode(exitUsage, nil)
	}
	return root
}

// usage is the synopsis of commands.
func usage(commands []*cobra.Command) string {
	var b strings.Builder
	b.WriteString("Usage:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  locksmith %s\n", c.Use)
	}
	b.WriteString("\nRun \"locksmith help\" for the nodes, the environment and the exit codes,\nand \"locksmith COMMAND --help\" for the flags of a command.\n")
	return b.String()
}

// execute runs the command line args and returns the exit code.
func (a *app) execute(args []string) int {
	root := a.rootCommand()
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	code := codeOf(err, exitUsage)
	var e *exitErr
	if !errors.As(err, &e) || e.err != nil {
		fmt.Fprintln(a.stderr, scrub("locksmith: "+err.Error(), a.secrets))
	}
	return code
}

// logf writes a line to stderr when -v is given.
func (a *app) logf(format string, args ...any) {
	if a.verbose {
		a.warnf(format, args...)
	}
}

// warnf writes a line to stderr.
func (a *app) warnf(format string, args ...any) {
	fmt.Fprintln(a.stderr, scrub("locksmith: "+fmt.Sprintf(format, args...), a.secrets))
}

// fail returns err as a configuration or infrastructure error.
func (a *app) fail(err error) error { return withCode(a.errorCode, err) }

// nodes connects to the nodes of the flags and environment.
func (a *app) nodes() (nodeList, error) {
	if len(a.conn.urls) == 0 {
		if env := os.Getenv("LOCKSMITH_NODES"); env != "" {
			for _, u := range strings.Split(env, ",") {
				if u = strings.TrimSpace(u); u != "" {
					a.conn.urls = append(a.conn.urls, u)
				}
			}
		}
	}
	a.conn.password = os.Getenv("LOCKSMITH_PASSWORD")
	ns, err := a.conn.connect(&a.secrets)
	if err != nil {
		return nil, a.fail(err)
	}
	return ns, nil
}

// client connects to the nodes and returns a Client over them.
func (a *app) client(opts ...redlock.Option) (*redlock.Client, nodeList, error) {
	ns, err := a.nodes()
	if err != nil {
		return nil, nil, err
	}
	if a.nodeTimeout != 0 {
		opts = append(opts, redlock.WithNodeTimeout(a.nodeTimeout))
	}
	// The CLI works on the deployment its programs use, which may have
	// opted in to an even count; doctor warns about one.
	opts = append(opts, redlock.WithEvenNodes(true))
	c, err := redlock.New(ns.conns(), opts...)
	if err != nil {
		ns.close()
		return nil, nil, a.fail(err)
	}
	return c, ns, nil
}

// exactArgs is cobra.ExactArgs with a usage exit code.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s takes %d argument(s), got %d; see locksmith %s --help", cmd.Name(), n, len(args), cmd.Name())
		}
		return nil
	}
}

// flagChanged reports whether the flag name was set on the command line.
func flagChanged(fs *pflag.FlagSet, name string) bool {
	f := fs.Lookup(name)
	return f != nil && f.Changed
}
