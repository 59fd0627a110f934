package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/daemon"
	"github.com/memfsd/memfsd/mcpserver"
	"github.com/memfsd/memfsd/memtool"
	"github.com/memfsd/memfsd/mirror"
)

// mcpReadyWait bounds how long `memfsd mcp` waits for a first clone before
// serving (tools answer "not available yet" until it is done).
const mcpReadyWait = 30 * time.Second

func newMCPCmd(g *globals) *cobra.Command {
	var (
		id, dialectName string
		pushIdle        time.Duration
		shutdownTimeout time.Duration
		inProcess       bool
	)
	cmd := &cobra.Command{
		Use:   "mcp --agent ID [--dialect letta-code] [--push-idle 2s]",
		Short: "Serve the agent's memory over the Model Context Protocol on stdin/stdout",
		Long: "Serve the agent's memory over MCP (stdio): what an MCP client's config starts, e.g.\n" +
			"  claude mcp add memory -- memfsd mcp --agent me\n" +
			"Tools: memory (memory_20250818; letta-code's memory and memory_apply_patch with --dialect\n" +
			"letta-code), memory_history, memory_show, memory_sync. Resources: memory:///<path> per\n" +
			"file (subscribable), memfsd://context; prompt memory_context.\n" +
			"When a daemon manages the agent, the session goes through the agent's own socket\n" +
			"(<home>/agents/<id>/memfsd.sock, /mcp); otherwise the agent runs in this process: clone\n" +
			"on first run, pull at start, a commit per write, a push after --push-idle without a\n" +
			"tool call, at the client's disconnect, on memory_sync and on SIGTERM.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := agent.ValidateID(id); err != nil {
				return fmt.Errorf("flag --agent: %w", err)
			}
			dialect, err := memtool.ParseDialect(dialectName)
			if err != nil {
				return fmt.Errorf("flag --dialect: %w", err)
			}
			if pushIdle <= 0 {
				return fmt.Errorf("flag --push-idle: must be positive, got %s", pushIdle)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if !inProcess {
				p, err := dialAgentSocket(ctx, g.homeDir(), id, dialect)
				if err == nil {
					return p.Run(ctx, mcpserver.StdioTransport(os.Stdin, os.Stdout))
				}
				if !errors.Is(err, errNoDaemon) {
					return err
				}
				// A daemon on the home that does not serve the agent:
				// never a second owner of the agent beside it.
				if berr := g.besideDaemon("mcp", id, true); berr != nil {
					return berr
				}
			}
			return runMCPInProcess(ctx, g, id, mcpserver.Options{Dialect: dialect, PushIdle: pushIdle}, shutdownTimeout)
		},
	}
	cmd.Flags().StringVar(&id, "agent", "", "agent id (env MEMFSD_AGENT)")
	cmd.Flags().StringVar(&dialectName, "dialect", "", "the memory tool's dialect: anthropic (memory_20250818, the default) or letta-code (env MEMFSD_DIALECT)")
	cmd.Flags().DurationVar(&pushIdle, "push-idle", mcpserver.DefaultPushIdle, "push this long after the last tool call (env MEMFSD_PUSH_IDLE)")
	cmd.Flags().DurationVar(&shutdownTimeout, "shutdown-timeout", daemon.DefaultShutdownTimeout, "bound on the final push at disconnect or SIGTERM (env MEMFSD_SHUTDOWN_TIMEOUT)")
	cmd.Flags().BoolVar(&inProcess, "in-process", false, "run the agent in this process even when a daemon serves it (env MEMFSD_IN_PROCESS)")
	return cmd
}

// errNoDaemon: no daemon serves the agent's own socket.
var errNoDaemon = errors.New("no daemon serves the agent")

// dialAgentSocket connects to the daemon's MCP server for agent id, on the
// agent's own socket; errNoDaemon when there is none (no socket file, or
// nobody listening on it).
func dialAgentSocket(ctx context.Context, home, id string, dialect memtool.Dialect) (*mcpserver.Proxy, error) {
	path := daemon.AgentSocketPath(home, id)
	if _, err := os.Stat(path); err != nil {
		return nil, errNoDaemon
	}
	c, err := net.DialTimeout("unix", path, 2*time.Second)
	if err != nil {
		return nil, errNoDaemon // a socket left by a daemon gone
	}
	c.Close()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}}
	endpoint := "http://memfsd" + daemon.MCPPath
	if dialect != "" {
		endpoint += "?dialect=" + url.QueryEscape(string(dialect))
	}
	p, err := mcpserver.DialProxy(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, "dev")
	if err != nil {
		return nil, fmt.Errorf("mcp %s: connect to the daemon on %s: %w", id, path, err)
	}
	return p, nil
}

// runMCPInProcess runs agent id in this process (its commit and sync loops
// as the daemon runs them) and serves it on stdio until the client
// disconnects or a signal comes; then pushes within shutdownTimeout.
func runMCPInProcess(ctx context.Context, g *globals, id string, opts mcpserver.Options, shutdownTimeout time.Duration) error {
	cfg, err := g.config()
	if err != nil {
		return err
	}
	opts.Logger = cfg.Logger
	a, err := agent.New(cfg, id)
	if err != nil {
		return err
	}
	a.Background = true
	mirror.Attach(a)
	// Direct writes into the folder are committed as the daemon commits
	// them, so a subscribed client is told of them.
	stopWatch, err := daemon.WatchAgent(a, cfg.Logger.With("agent", id))
	if err != nil {
		return err
	}
	defer stopWatch()
	if err := a.Open(ctx); err != nil {
		return err
	}
	// Serve once the work tree is there (cloned, or opened): a first
	// clone that takes long still gets a session, whose tools say so.
	deadline := time.Now().Add(mcpReadyWait)
	for !a.Ready() && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	host := mcpserver.NewHost(a, opts)
	runErr := host.Run(ctx, mcpserver.StdioTransport(os.Stdin, os.Stdout))
	host.Close()
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := a.Close(sctx); err != nil {
		cfg.Logger.Warn("final push failed; commits stay local for the next start", "agent", id, "err", err)
	}
	if runErr != nil && !errors.Is(runErr, context.Canceled) && !errors.Is(runErr, mcp.ErrConnectionClosed) {
		return runErr
	}
	return nil
}
