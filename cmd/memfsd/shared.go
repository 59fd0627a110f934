package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/daemon"
	"github.com/memfsd/memfsd/shared"
)

// newSharedCmd is `memfsd shared attach|detach|list`: the operator's shared
// memory repositories, through the admin socket when a daemon runs, else
// in memfsd's records (taken up at the daemon's next start).
func newSharedCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "shared",
		Short: "Shared memory repositories attached to several agents (letta-code's shared-memory)",
	}
	var id, write, remote string
	var asJSON bool
	attach := &cobra.Command{
		Use:   "attach NAME --agent ID [--write allow|propose|deny] [--remote URL]",
		Short: "Operator: attach shared repository NAME to the agent, or change its write policy",
		Long: "The repository is cloned once per home (<home>/shared/NAME) and shown to the agent in its view\n" +
			"folder <home>/agents/ID/shared/NAME. --remote defaults to the URL this home already has for NAME,\n" +
			"else letta-code's <base>/v1/git/ID/repositories/NAME.git.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := agent.ValidateID(id); err != nil {
				return fmt.Errorf("flag --agent: %w", err)
			}
			if _, err := shared.ParseWritePolicy(write); err != nil {
				return fmt.Errorf("flag --write: %w", err)
			}
			body, _ := json.Marshal(map[string]string{"write": write, "remote_url": remote})
			var info daemon.SharedInfo
			ok, err := sharedAdmin(g, "PUT", "/v1/agents/"+id+"/shared/"+args[0], string(body), &info)
			if err != nil {
				return err
			}
			if !ok {
				cfg, err := g.config()
				if err != nil {
					return err
				}
				at, err := shared.Attach(cfg, id, shared.Attachment{Name: args[0], Write: shared.WritePolicy(write), RemoteURL: remote})
				if err != nil {
					return err
				}
				info = daemon.SharedInfo{Attachment: at, View: cfg.ViewDir(id, at.Name)}
				info.RemoteURL = agent.RedactURL(info.RemoteURL)
				fmt.Fprintln(cmd.ErrOrStderr(), "no daemon running: recorded; the daemon attaches it at its next start")
			}
			return printShared(cmd.OutOrStdout(), []daemon.SharedInfo{info}, asJSON)
		},
	}
	attach.Flags().StringVar(&write, "write", "allow", "what the agent may do: allow, propose (a proposals/ branch an operator merges) or deny (env MEMFSD_WRITE)")
	attach.Flags().StringVar(&remote, "remote", "", "the shared repository's URL (env MEMFSD_REMOTE)")
	detach := &cobra.Command{
		Use:   "detach NAME --agent ID",
		Short: "Operator: detach shared repository NAME from the agent (the clone and the view stay on disk)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := agent.ValidateID(id); err != nil {
				return fmt.Errorf("flag --agent: %w", err)
			}
			ok, err := sharedAdmin(g, "DELETE", "/v1/agents/"+id+"/shared/"+args[0], "", nil)
			if err != nil {
				return err
			}
			if !ok {
				cfg, err := g.config()
				if err != nil {
					return err
				}
				found, err := shared.Detach(cfg, id, args[0])
				if err != nil {
					return err
				}
				if !found {
					return fmt.Errorf("shared detach %s: agent %s has no shared repository of that name (memfsd shared list --agent %s)", args[0], id, id)
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "detached %s from %s\n", args[0], id)
			return nil
		},
	}
	list := &cobra.Command{
		Use:   "list --agent ID [--json]",
		Short: "The shared repositories attached to the agent and their policies",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := agent.ValidateID(id); err != nil {
				return fmt.Errorf("flag --agent: %w", err)
			}
			var out struct {
				Shared []daemon.SharedInfo `json:"shared"`
			}
			ok, err := sharedAdmin(g, "GET", "/v1/agents/"+id+"/shared", "", &out)
			if err != nil {
				return err
			}
			if !ok {
				cfg, err := g.config()
				if err != nil {
					return err
				}
				list, err := shared.ReadAttachments(cfg, id)
				if err != nil {
					return err
				}
				for _, at := range list {
					at.RemoteURL = agent.RedactURL(at.RemoteURL)
					out.Shared = append(out.Shared, daemon.SharedInfo{Attachment: at, View: cfg.ViewDir(id, at.Name)})
				}
			}
			return printShared(cmd.OutOrStdout(), out.Shared, asJSON)
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	attach.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	for _, c := range []*cobra.Command{attach, detach, list} {
		c.Flags().StringVar(&id, "agent", "", "agent id (env MEMFSD_AGENT)")
	}
	cmd.AddCommand(attach, detach, list)
	return cmd
}

// sharedAdmin sends a request to the daemon's admin socket; false (and no
// error) when no daemon runs or it does not manage the agent (then the
// caller works on the records).
func sharedAdmin(g *globals, method, path, body string, out any) (bool, error) {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	var raw json.RawMessage
	code, err := g.adminClient(0).do(method, path, r, &raw)
	var unreachable errUnreachable
	switch {
	case errors.As(err, &unreachable):
		return false, nil
	case err != nil:
		return false, err
	case code == 200:
		if out != nil {
			return true, json.Unmarshal(raw, out)
		}
		return true, nil
	}
	var fail struct {
		Error string `json:"error"`
	}
	json.Unmarshal(raw, &fail)
	if code == 404 && strings.Contains(fail.Error, "is not managed") {
		return false, nil
	}
	return false, fmt.Errorf("shared: the daemon answered %d: %s", code, fail.Error)
}

func printShared(w io.Writer, list []daemon.SharedInfo, asJSON bool) error {
	if asJSON {
		return printJSON(w, map[string]any{"shared": list})
	}
	if len(list) == 0 {
		fmt.Fprintln(w, "no shared repositories attached")
	}
	for _, s := range list {
		state := ""
		if s.Status != nil {
			state = " " + s.Status.State
		}
		fmt.Fprintf(w, "%s\twrite=%s\t%s\tview %s%s\n", s.Name, s.Write, s.RemoteURL, s.View, state)
	}
	return nil
}
