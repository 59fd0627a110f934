package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/daemon"
)

func newRunCmd(g *globals) *cobra.Command {
	var (
		agents          []string
		debounce        time.Duration
		pullInterval    time.Duration
		shutdownTimeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "run [--agent ID]...",
		Short: "The sidecar: serve the API and keep the agents' memory committed and pushed",
		Long: "The sidecar: serves the API on --listen, manages the agents named and any added with\n" +
			"PUT /v1/agents/{id}: clone or pull at start, a commit per settled write, a push per turn.\n" +
			"Each agent also gets its own socket, <home>/agents/<id>/memfsd.sock, serving only its\n" +
			"routes: the one to give that agent.\n" +
			"SIGTERM commits pending writes and pushes (bounded by --shutdown-timeout); a second\n" +
			"signal aborts that push. Exit 0 after a clean shutdown.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.config()
			if err != nil {
				return err
			}
			if debounce <= 0 {
				return fmt.Errorf("flag --debounce: must be positive, got %s", debounce)
			}
			d, err := daemon.New(cfg)
			if err != nil {
				return err
			}
			d.Debounce, d.PullInterval = debounce, pullInterval
			for _, id := range agents {
				if err := agent.ValidateID(id); err != nil {
					return fmt.Errorf("flag --agent: %w", err)
				}
			}
			listen, admin := g.listenAddr(cfg.Home), g.adminAddr(cfg.Home)
			if listen == admin {
				return fmt.Errorf("flags --listen and --admin-listen: both are %s; the operator's socket must not be the agent's", listen)
			}
			ln, err := daemon.Listen(listen)
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
			servers := []*http.Server{daemon.NewServer(d.AgentHandler(admin)), daemon.NewServer(d.AdminHandler())}
			var served sync.WaitGroup
			for i, l := range []net.Listener{ln, aln} {
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
			cfg.Logger.Info("shutting down: committing and pushing", "signal", sig.String(), "timeout", shutdownTimeout)
			ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
			defer cancel()
			go func() {
				select {
				case s := <-sigs:
					cfg.Logger.Warn("second signal: aborting the final push", "signal", s.String())
					cancel()
				case <-ctx.Done():
				}
			}()
			// Stop accepting first, so no request reaches a closing agent;
			// requests in flight get a moment, then are cut.
			sctx, scancel := context.WithTimeout(ctx, 2*time.Second)
			var stopped sync.WaitGroup
			stopped.Add(1)
			go func() { defer stopped.Done(); d.CloseSockets(sctx) }()
			for _, srv := range servers {
				if err := srv.Shutdown(sctx); err != nil {
					srv.Close()
				}
			}
			stopped.Wait()
			scancel()
			served.Wait()
			d.Close(ctx)
			cfg.Logger.Info("stopped")
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&agents, "agent", nil, "agent id to manage (repeatable; env MEMFSD_AGENT, comma-separated)")
	f.DurationVar(&debounce, "debounce", daemon.DefaultDebounce, "quiet time after a write before it is committed (env MEMFSD_DEBOUNCE)")
	f.DurationVar(&pullInterval, "pull-interval", 0, "fetch operators' changes between turns every this long; 0 = off (env MEMFSD_PULL_INTERVAL)")
	f.DurationVar(&shutdownTimeout, "shutdown-timeout", daemon.DefaultShutdownTimeout, "bound on the final commit and push at SIGTERM (env MEMFSD_SHUTDOWN_TIMEOUT)")
	return cmd
}
