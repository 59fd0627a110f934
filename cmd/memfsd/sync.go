package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/retry"
)

func newSyncCmd(g *globals) *cobra.Command {
	var id string
	var acceptDeletes bool
	cmd := &cobra.Command{
		Use:   "sync --agent ID",
		Short: "One-shot sync, no daemon: clone or pull, commit what is uncommitted, push",
		Long: "One-shot sync, no daemon: clone or pull, commit what is uncommitted, push.\n" +
			"Exit 0 synced; 1 failed (class on stderr); 3 synced with conflict copies.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := agent.ValidateID(id); err != nil {
				return fmt.Errorf("flag --agent: %w", err)
			}
			cfg, err := g.config()
			if err != nil {
				return err
			}
			a, err := openAgent(cmd.Context(), cfg, id)
			if err != nil {
				return syncFailed(cmd, err)
			}
			defer a.Close(context.Background())
			res, err := a.Sync(cmd.Context(), agent.SyncOptions{AcceptDeletes: acceptDeletes})
			if err != nil {
				return syncFailed(cmd, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "synced %s: head %s, pulled %t, committed %d, pushed %d\n",
				id, res.Head.String()[:12], res.Pulled, res.Committed, res.Pushed)
			if len(res.Conflicts) > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "conflict copies: %v\n", res.Conflicts)
				return exitCode(3)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&id, "agent", "", "agent id (env MEMFSD_AGENT)")
	cmd.Flags().BoolVar(&acceptDeletes, "accept-deletes", false, "commit a mass deletion the guard would hold (env MEMFSD_ACCEPT_DELETES)")
	return cmd
}

// syncFailed prints the class, the cause and the next step, and exits 1.
func syncFailed(cmd *cobra.Command, err error) error {
	if errors.Is(err, agent.ErrMassDeleteHeld) {
		fmt.Fprintf(cmd.ErrOrStderr(), "memfsd: %v\n", err)
		return exitCode(1)
	}
	class := retry.ClassOf(err)
	fmt.Fprintf(cmd.ErrOrStderr(), "memfsd: sync failed: class=%s: %v\nnext step: %s\n", class, err, class.NextStep())
	return exitCode(1)
}

// openAgent opens an agent for one command (no loops): cloned on first use.
func openAgent(ctx context.Context, cfg *agent.Config, id string) (*agent.Agent, error) {
	a, err := agent.New(cfg, id)
	if err != nil {
		return nil, err
	}
	if err := a.Open(ctx); err != nil {
		a.Close(ctx)
		return nil, err
	}
	return a, nil
}
