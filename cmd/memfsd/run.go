package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/daemon"
	"github.com/memfsd/memfsd/mcpserver"
)

// connCutWait is how long requests in flight get at shutdown before their
// connections are cut.
const connCutWait = 2 * time.Second

// shutdownMargin is how much of --shutdown-timeout is kept for the exit
// itself: the shutdown's work is bounded by the rest, and the process
// exits at the timeout whatever still runs.
func shutdownMargin(timeout time.Duration) time.Duration {
	return min(timeout/10, 500*time.Millisecond)
}

// repeatSignalGrace: a SIGTERM or SIGINT this soon after the first is a
// duplicate (a supervisor's, or a double Ctrl-C), not a request to abort.
const repeatSignalGrace = 2 * time.Second

func newRunCmd(g *globals) *cobra.Command {
	var (
		agents          []string
		debounce        time.Duration
		pullInterval    time.Duration
		shutdownTimeout time.Duration
		insecureListen  bool
		mcpPushIdle     time.Duration
		mcpBounds       mcpserver.Options
		mcpListen       string
	)
	cmd := &cobra.Command{
		Use:   "run [--agent ID]...",
		Short: "The sidecar: serve the API and keep the agents' memory committed and pushed",
		Long: "The sidecar: serves the API on --listen, manages the agents named and any added with\n" +
			"PUT /v1/agents/{id}: clone or pull at start, a commit per settled write, a push per turn.\n" +
			"Each agent also gets its own socket, <home>/agents/<id>/memfsd.sock, serving only its\n" +
			"routes: the one to give that agent.\n" +
			"SIGTERM cuts the connections, commits pending writes and pushes; the process exits\n" +
			"within --shutdown-timeout of the signal whatever clients do. A second signal exits at\n" +
			"once, unless it comes within 2 s of the first (then it is ignored: supervisors often\n" +
			"send two at once). Exit 0 after a clean shutdown.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.config()
			if err != nil {
				return err
			}
			if debounce <= 0 {
				return fmt.Errorf("flag --debounce: must be positive, got %s", debounce)
			}
			// One daemon per home, before anything in it is touched (a
			// second one would take over the first's sockets).
			lock, err := lockHome(cfg.Home, g.homeArg())
			if err != nil {
				return err
			}
			defer lock.Close()
			d, err := daemon.New(cfg)
			if err != nil {
				return err
			}
			d.Debounce, d.PullInterval = debounce, pullInterval
			if mcpPushIdle <= 0 {
				return fmt.Errorf("flag --mcp-push-idle: must be positive, got %s", mcpPushIdle)
			}
			d.MCP.PushIdle = mcpPushIdle
			for _, b := range []struct {
				flag string
				ok   bool
			}{
				{"--mcp-max-sessions", mcpBounds.MaxSessions > 0},
				{"--mcp-session-idle", mcpBounds.SessionIdle > 0},
				{"--mcp-max-subscriptions", mcpBounds.MaxSubscriptions > 0},
				{"--mcp-write-timeout", mcpBounds.WriteTimeout > 0},
			} {
				if !b.ok {
					return fmt.Errorf("flag %s: must be positive", b.flag)
				}
			}
			d.MCP.MaxSessions, d.MCP.SessionIdle = mcpBounds.MaxSessions, mcpBounds.SessionIdle
			d.MCP.MaxSubscriptions, d.MCP.WriteTimeout = mcpBounds.MaxSubscriptions, mcpBounds.WriteTimeout
			if shutdownTimeout <= 0 {
				return fmt.Errorf("flag --shutdown-timeout: must be positive, got %s", shutdownTimeout)
			}
			for _, id := range agents {
				if err := agent.ValidateID(id); err != nil {
					return fmt.Errorf("flag --agent: %w", err)
				}
			}
			listen, admin := g.listenAddr(cfg.Home), g.adminAddr(cfg.Home)
			if listen == admin {
				return fmt.Errorf("flags --listen and --admin-listen: both are %s; the operator's socket must not be the agent's", listen)
			}
			// A TCP address reachable from the network needs a credential
			// (or the operator's explicit --insecure-listen): --listen its
			// own, --admin-listen the operator's own, and neither opens the
			// other. A TCP listener with a token asks it. Unix sockets are
			// guarded by their mode.
			var listenToken, adminToken string
			if g.listenTokenFile != "" {
				if listenToken, err = daemon.ReadListenToken(g.listenTokenFile); err != nil {
					return fmt.Errorf("flag --listen-token-file: %w", err)
				}
			}
			if g.adminListenTokenFile != "" {
				if adminToken, err = daemon.ReadListenToken(g.adminListenTokenFile); err != nil {
					return fmt.Errorf("flag --admin-listen-token-file: %w", err)
				}
			}
			if adminToken != "" && adminToken == listenToken {
				return errors.New("flags --listen-token-file and --admin-listen-token-file: the same token; the operator's must not be the one given to agents")
			}
			if err := daemon.CheckListen("--listen", "--listen-token-file", listen, listenToken != "", insecureListen); err != nil {
				return err
			}
			if err := daemon.CheckListen("--admin-listen", "--admin-listen-token-file", admin, adminToken != "", insecureListen); err != nil {
				return err
			}
			if daemon.IsTCP(admin) && adminToken == "" && listenToken != "" && !insecureListen {
				// Before, --listen-token-file guarded both: never let the
				// operator's routes go open to every local process quietly.
				return fmt.Errorf("flag --admin-listen %s: --listen-token-file's token is the agents' and does not open the operator's routes; give the operator's own with --admin-listen-token-file, listen on a unix socket, or pass --insecure-listen to serve them without a credential", admin)
			}
			for _, l := range []struct{ addr, token string }{{listen, listenToken}, {admin, adminToken}} {
				if daemon.IsTCP(l.addr) && !daemon.IsLoopback(l.addr) && l.token == "" {
					cfg.Logger.Warn("listening on a network address without a credential (--insecure-listen): anyone who reaches it reads and writes every agent's memory", "listen", l.addr)
				}
			}
			if mcpListen != "" {
				if err := daemon.CheckMCPListen(mcpListen, insecureListen); err != nil {
					return err
				}
			}
			ln, err := daemon.ListenAgent(listen)
			if err != nil {
				return err
			}
			aln, err := daemon.Listen(admin)
			if err != nil {
				ln.Close()
				return fmt.Errorf("flag --admin-listen: %w", err)
			}
			// Each agent gets its own socket, serving only its routes (SPEC §8).
			d.ServeAgentSockets(admin)
			var mln net.Listener
			if mcpListen != "" {
				// Each agent's MCP on loopback TCP, behind its own token.
				if mln, err = daemon.Listen(mcpListen); err != nil {
					ln.Close()
					aln.Close()
					return fmt.Errorf("flag --mcp-listen: %w", err)
				}
				defer mln.Close()
				d.ServeMCPTokens()
			}
			if err := d.Open(); err != nil {
				ln.Close()
				aln.Close()
				return err
			}
			for _, id := range agents {
				if err := d.Manage(id); err != nil {
					ln.Close()
					aln.Close()
					d.Close(context.Background())
					return fmt.Errorf("flag --agent: %w", err)
				}
			}
			// Agents added at runtime (PUT /v1/agents/{id}) come back.
			recorded, err := agent.RecordedAgents(cfg)
			if err != nil {
				cfg.Logger.Warn("agents added at runtime: cannot list them", "err", err)
			}
			for _, id := range recorded {
				if slices.Contains(agents, id) {
					continue
				}
				if err := d.Manage(id); err != nil {
					cfg.Logger.Error("agent added at runtime: cannot manage it again", "agent", id, "err", err)
					continue
				}
				agents = append(agents, id)
			}
			handlers := []http.Handler{d.AgentHandler(admin), d.AdminHandler()}
			for i, l := range []struct{ addr, token string }{{listen, listenToken}, {admin, adminToken}} {
				if l.token != "" && daemon.IsTCP(l.addr) {
					handlers[i] = daemon.RequireBearer(l.token, handlers[i])
				}
			}
			servers := []*http.Server{daemon.NewServer(handlers[0]), daemon.NewServer(handlers[1])}
			listeners := []net.Listener{ln, aln}
			if mln != nil {
				servers = append(servers, daemon.NewServer(d.MCPListenHandler()))
				listeners = append(listeners, mln)
				cfg.Logger.Info("mcp listening: each agent at /agents/<id>/mcp with its own token", "mcp_listen", mln.Addr().String(), "token_file", daemon.MCPTokenPath(cfg.Home, "<id>"))
			}
			var served sync.WaitGroup
			for i, l := range listeners {
				served.Add(1)
				go func() {
					defer served.Done()
					if err := servers[i].Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
						cfg.Logger.Error("api server stopped", "listen", l.Addr().String(), "err", err)
					}
				}()
			}
			cfg.Logger.Info("memfsd running", "listen", listen, "admin_listen", admin, "agents", len(agents))

			sigs := make(chan os.Signal, 2)
			signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
			sig := <-sigs
			first := time.Now()
			cfg.Logger.Info("shutting down: cutting connections, committing and pushing", "signal", sig.String(), "timeout", shutdownTimeout)
			// --shutdown-timeout holds from the signal to the exit: the
			// work below is bounded a little inside it, and past it the
			// process exits whatever still runs.
			ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout-shutdownMargin(shutdownTimeout))
			defer cancel()
			watchdog := time.AfterFunc(shutdownTimeout, func() {
				cfg.Logger.Error("shutdown timeout reached with the shutdown still running: exiting now (commits not pushed stay local for the next start)", "timeout", shutdownTimeout)
				os.Exit(1)
			})
			defer watchdog.Stop()
			go func() {
				for s := range sigs {
					// A supervisor (or a person's double Ctrl-C) often
					// sends two at once: only one sent on purpose, later,
					// aborts the shutdown (issue 28).
					if since := time.Since(first); since < repeatSignalGrace {
						cfg.Logger.Info("signal ignored: it came within 2 s of the first; the final push goes on (send it again later to abort it)", "signal", s.String(), "after", since.Round(time.Millisecond))
						continue
					}
					cfg.Logger.Warn("second signal: aborting the final push and exiting now (commits not pushed stay local for the next start)", "signal", s.String())
					cancel()
					os.Exit(1)
				}
			}()
			// Cut the connections first, so no request reaches a closing
			// agent and no client holds the shutdown: requests in flight
			// get a moment, then the connections are closed (an MCP
			// client that does not read included).
			sctx, scancel := context.WithTimeout(ctx, connCutWait)
			var stopped sync.WaitGroup
			stopped.Add(1)
			go func() { defer stopped.Done(); d.CloseSockets(sctx) }()
			for _, srv := range servers {
				stopped.Add(1)
				go func() {
					defer stopped.Done()
					if err := srv.Shutdown(sctx); err != nil {
						srv.Close()
					}
				}()
			}
			stopped.Wait()
			scancel()
			served.Wait()
			// Every agent's final commit and push, in what is left.
			d.Close(ctx)
			cfg.Logger.Info("stopped")
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&agents, "agent", nil, "agent id to manage (repeatable; env MEMFSD_AGENT, comma-separated)")
	f.DurationVar(&debounce, "debounce", daemon.DefaultDebounce, "quiet time after a write before it is committed (env MEMFSD_DEBOUNCE)")
	f.DurationVar(&mcpPushIdle, "mcp-push-idle", mcpserver.DefaultPushIdle, "MCP sessions on the agents' sockets (/mcp): push this long after the last tool call (env MEMFSD_MCP_PUSH_IDLE)")
	f.StringVar(&mcpListen, "mcp-listen", "", "also serve each agent's MCP (streamable HTTP) on this TCP address, 127.0.0.1:PORT, at /agents/<id>/mcp, to requests with that agent's own token (<home>/agents/<id>/mcp-token, made at start) as Authorization: Bearer; for MCP clients that speak HTTP, not unix sockets (env MEMFSD_MCP_LISTEN)")
	f.DurationVar(&pullInterval, "pull-interval", 0, "fetch operators' changes between turns every this long; 0 = off (env MEMFSD_PULL_INTERVAL)")
	f.IntVar(&mcpBounds.MaxSessions, "mcp-max-sessions", mcpserver.DefaultMaxSessions, "MCP on the agents' sockets: sessions one agent may have open (and session-less requests in flight); past it a new one is answered 429 (env MEMFSD_MCP_MAX_SESSIONS)")
	f.DurationVar(&mcpBounds.SessionIdle, "mcp-session-idle", mcpserver.DefaultSessionIdle, "MCP on the agents' sockets: a session with no request in flight (an open stream is one) this long is ended (env MEMFSD_MCP_SESSION_IDLE)")
	f.IntVar(&mcpBounds.MaxSubscriptions, "mcp-max-subscriptions", mcpserver.DefaultMaxSubscriptions, "MCP on the agents' sockets: resources one session may subscribe to (env MEMFSD_MCP_MAX_SUBSCRIPTIONS)")
	f.DurationVar(&mcpBounds.WriteTimeout, "mcp-write-timeout", mcpserver.DefaultWriteTimeout, "MCP on the agents' sockets: bound on each write to a client; a client that does not read within it is dropped (env MEMFSD_MCP_WRITE_TIMEOUT)")
	f.DurationVar(&shutdownTimeout, "shutdown-timeout", daemon.DefaultShutdownTimeout, "bound from SIGTERM to exit: connections cut, every agent's final commit and push (env MEMFSD_SHUTDOWN_TIMEOUT)")
	f.BoolVar(&insecureListen, "insecure-listen", false, "allow a TCP --listen other than loopback without --listen-token-file, a TCP --admin-listen without --admin-listen-token-file: anyone who reaches it reads and writes every agent's memory (env MEMFSD_INSECURE_LISTEN)")
	return cmd
}
