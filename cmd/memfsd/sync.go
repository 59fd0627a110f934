package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/mirror"
	"github.com/memfsd/memfsd/reminders"
	"github.com/memfsd/memfsd/retry"
)

func newSyncCmd(g *globals) *cobra.Command {
	var id string
	var acceptDeletes, restoreDeletes bool
	cmd := &cobra.Command{
		Use:   "sync --agent ID",
		Short: "One-shot sync: clone or pull, commit what is uncommitted, push (a running daemon's turn)",
		Long: "One-shot sync: clone or pull, commit what is uncommitted, push. Beside a running\n" +
			"daemon it is that daemon's turn for the agent (memfsd turn), on the agent's remote.\n" +
			"Exit 0 synced; 1 failed (class on stderr), or a file was not committed (too large,\n" +
			"a credential held by the secret guard, ...: named on stderr, the others pushed);\n" +
			"3 synced with conflict copies.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := agent.ValidateID(id); err != nil {
				return fmt.Errorf("flag --agent: %w", err)
			}
			if acceptDeletes && restoreDeletes {
				return errors.New("flags --accept-deletes and --restore-deletes: choose one")
			}
			cfg, err := g.config()
			if err != nil {
				return err
			}
			if acceptDeletes || restoreDeletes {
				// A running daemon owns the agent: the operator's decision
				// goes through its admin socket.
				handled, err := acceptThroughDaemon(cmd, g, id, agent.AcceptOptions{Deletes: acceptDeletes, Restore: restoreDeletes})
				if handled || err != nil {
					return err
				}
				// Not through it: never beside it either (a turn is not
				// the decision).
				if berr := g.besideDaemon("sync", id, false); berr != nil {
					return berr
				}
			}
			// A running daemon owns the agent: the sync is its turn.
			if handled, err := syncThroughDaemon(cmd, g, id); handled || err != nil {
				return err
			}
			a, err := openAgent(cmd.Context(), cfg, id)
			if err != nil {
				return syncFailed(cmd, err)
			}
			defer a.Close(context.Background())
			if acceptDeletes || restoreDeletes {
				if _, err := a.Accept(cmd.Context(), agent.AcceptOptions{Deletes: acceptDeletes, Restore: restoreDeletes}); err != nil && !errors.Is(err, agent.ErrNothingHeld) {
					return syncFailed(cmd, err)
				}
			}
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
			st := a.Status(false)
			if werr := agent.WriteProblemsError(st.WriteProblems); werr != nil {
				// The others are pushed; a file that was not saved is a
				// failure all the same, named with its cause.
				fmt.Fprintf(cmd.ErrOrStderr(), "memfsd: %v\n", werr)
				return exitCode(1)
			}
			if serr := secretsHeldError(id, st.SecretHeld); serr != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "memfsd: %v\n", serr)
				return exitCode(1)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&id, "agent", "", "agent id (env MEMFSD_AGENT)")
	cmd.Flags().BoolVar(&acceptDeletes, "accept-deletes", false, "commit held deletions (through the daemon's admin socket when one runs) (env MEMFSD_ACCEPT_DELETES)")
	cmd.Flags().BoolVar(&restoreDeletes, "restore-deletes", false, "put held deleted files back instead (env MEMFSD_RESTORE_DELETES)")
	return cmd
}

// syncFailed prints the class, the cause and the next step, and exits 1.
func syncFailed(cmd *cobra.Command, err error) error {
	if errors.Is(err, agent.ErrMassDeleteHeld) {
		fmt.Fprintf(cmd.ErrOrStderr(), "memfsd: %v\n", err)
		return exitCode(1)
	}
	if errors.Is(err, agent.ErrPersonGitInProgress) {
		fmt.Fprintf(cmd.ErrOrStderr(), "memfsd: %v\nnext step: finish or abort the git operation in the folder (git commit, git revert --continue or --abort, ...), then run memfsd sync again\n", err)
		return exitCode(1)
	}
	class := retry.ClassOf(err)
	fmt.Fprintf(cmd.ErrOrStderr(), "memfsd: sync failed: class=%s: %s\nnext step: %s\n", class, retry.WithoutClass(string(class), err.Error()), retry.NextStep(err))
	return exitCode(1)
}

// openAgent opens an agent for one command (no loops): cloned on first use.
func openAgent(ctx context.Context, cfg *agent.Config, id string) (*agent.Agent, error) {
	a, err := agent.New(cfg, id)
	if err != nil {
		return nil, err
	}
	mirror.Attach(a) // no loop without Background: its status, read from disk
	if err := a.Open(ctx); err != nil {
		a.Close(ctx)
		return nil, err
	}
	return a, nil
}

// acceptThroughDaemon sends the operator's decision to a running daemon's
// admin socket; handled false means no daemon manages the agent (do it
// directly).
func acceptThroughDaemon(cmd *cobra.Command, g *globals, id string, opts agent.AcceptOptions) (bool, error) {
	body, _ := json.Marshal(opts)
	c := g.adminClient(2 * time.Minute)
	var res json.RawMessage
	code, err := c.do("POST", "/v1/agents/"+id+"/accept?wait=60s", bytes.NewReader(body), &res)
	var unreachable errUnreachable
	switch {
	case err == nil && code == http.StatusNotFound:
		if berr := g.besideDaemon("sync", id, true); berr != nil {
			return true, berr
		}
		return false, nil
	case errors.As(err, &unreachable):
		return false, nil
	case err != nil:
		return true, err
	case code == http.StatusConflict:
		fmt.Fprintf(cmd.OutOrStdout(), "nothing held for %s\n", id)
		return true, nil
	case code != http.StatusOK:
		fmt.Fprintf(cmd.ErrOrStderr(), "memfsd: accept %s: daemon answered %d: %s\n", id, code, res)
		return true, exitCode(1)
	}
	printRawJSON(cmd.OutOrStdout(), res)
	return true, nil
}

// syncThroughDaemon asks a running daemon for the agent's turn (its
// pipeline, its remote). handled false: no daemon runs on the home (sync
// directly). A daemon that runs but does not manage the agent, or cannot
// be reached, is an error with the command to run instead.
func syncThroughDaemon(cmd *cobra.Command, g *globals, id string) (bool, error) {
	const wait = 60 * time.Second
	c := g.agentClient(id, wait+time.Minute)
	var tr agent.TurnResult
	code, err := c.do("POST", "/v1/agents/"+id+"/turn?wait="+wait.String(), nil, &tr)
	var unreachable errUnreachable
	switch {
	case errors.As(err, &unreachable):
		return false, g.besideDaemon("sync", id, false)
	case err != nil:
		return true, err
	case code == http.StatusNotFound:
		if berr := g.besideDaemon("sync", id, true); berr != nil {
			return true, berr
		}
		return false, nil // a daemon on another home answered: not ours
	case code != http.StatusOK:
		return true, fmt.Errorf("sync --agent %s: the daemon answered %d: %s", id, code, tr.Error)
	}
	head := tr.Status.Head
	if len(head) > 12 {
		head = head[:12]
	}
	fmt.Fprintf(cmd.OutOrStdout(), "synced %s through the daemon: outcome %s, head %s, pushed %d\n", id, tr.Outcome, head, tr.Pushed)
	switch tr.Outcome {
	case "conflict":
		fmt.Fprintf(cmd.OutOrStdout(), "conflict copies: %v\n", tr.Status.Conflicts)
		return true, exitCode(3)
	case "delayed", "failed":
		// As a direct sync says it: the class once, the cause, the step.
		what := tr.Error
		if tr.Class != "" {
			what = "class=" + tr.Class + ": " + retry.WithoutClass(tr.Class, tr.Error)
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "memfsd: sync %s: %s\nnext step: %s\n", tr.Outcome, what, tr.NextStep)
		return true, exitCode(1)
	}
	if werr := agent.WriteProblemsError(tr.Status.WriteProblems); werr != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "memfsd: %v\n", werr)
		return true, exitCode(1)
	}
	if serr := secretsHeldError(id, tr.Status.SecretHeld); serr != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "memfsd: %v\n", serr)
		return true, exitCode(1)
	}
	return true, nil
}

// secretsHeldError is the files the secret guard keeps out of git, as a
// sync's failure (nil when none): each file with the rule it matched, and
// how they are released — the credential taken out of the file (or the
// file deleted), or, for text that is no credential, one sync by the
// operator with the guard off. The files beside them are pushed.
func secretsHeldError(id string, held []reminders.SecretHold) error {
	if len(held) == 0 {
		return nil
	}
	files := make([]string, len(held))
	for i, h := range held {
		files[i] = fmt.Sprintf("%s (%s)", reminders.ShowPath(h.Path), h.Pattern)
	}
	return fmt.Errorf("sync --agent %s: class=secret_held: %d file(s) not committed, they look like they hold a credential: %s\n"+
		"next step: take the credential out of the file or delete the file (it is committed at the next sync); "+
		"if it is no credential, the operator commits it with the guard off once: memfsd --no-secret-guard sync --agent %s (with no daemon running for the agent; a daemon's guard is its own flag)",
		id, len(held), strings.Join(files, ", "), id)
}
