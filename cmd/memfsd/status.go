package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/memfsd/memfsd/agent"
)

func newStatusCmd(g *globals) *cobra.Command {
	var id string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [--agent ID] [--json]",
		Short: "State of one or all agents (from the daemon, or read from disk when none runs)",
		Long:  "State of one or all agents. Exit 0; 2 when an agent is not clean.",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if id != "" {
				if err := agent.ValidateID(id); err != nil {
					return fmt.Errorf("flag --agent: %w", err)
				}
			}
			sts, err := g.statuses(id)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if id != "" && len(sts) == 1 {
					enc.Encode(sts[0])
				} else {
					enc.Encode(sts)
				}
			} else {
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "AGENT\tSTATE\tAHEAD\tBEHIND\tDIRTY\tCONFLICTS\tLAST ERROR")
				for _, s := range sts {
					le := "-"
					if s.LastError != nil {
						le = s.LastError.Class + ": " + s.LastError.Message
					}
					fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\n", s.Agent, s.State, s.Ahead, s.Behind, len(s.Dirty), len(s.Conflicts), le)
				}
				tw.Flush()
			}
			for _, s := range sts {
				if s.State != agent.StateClean {
					return exitCode(2)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&id, "agent", "", "agent id (default: all; env MEMFSD_AGENT)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (env MEMFSD_JSON)")
	return cmd
}

// statuses asks the daemon, or reads the folders when no daemon answers.
func (g *globals) statuses(id string) ([]agent.Status, error) {
	c := newAPIClient(g.listenAddr(g.homeDir()), 30*time.Second)
	if id != "" {
		c = g.agentClient(id, 30*time.Second)
		var st agent.Status
		code, err := c.do("GET", "/v1/agents/"+id+"/status", nil, &st)
		if err == nil && code == 200 {
			return []agent.Status{st}, nil
		}
		if err == nil && code != 404 {
			return nil, fmt.Errorf("status %s: daemon answered %d", id, code)
		}
	} else {
		var list struct {
			Agents []agent.Status `json:"agents"`
		}
		if code, err := c.do("GET", "/v1/agents", nil, &list); err == nil && code == 200 {
			return list.Agents, nil
		}
	}
	// No daemon (or it does not manage the agent): read from disk.
	cfg, err := g.config()
	if err != nil {
		return nil, err
	}
	ids := []string{id}
	if id == "" {
		ids = nil
		entries, _ := os.ReadDir(filepath.Join(cfg.Home, "agents"))
		for _, e := range entries {
			if e.IsDir() {
				ids = append(ids, e.Name())
			}
		}
	}
	var out []agent.Status
	for _, x := range ids {
		if _, err := os.Stat(filepath.Join(cfg.MemoryDir(x), ".git", "HEAD")); err != nil {
			if id != "" {
				return nil, fmt.Errorf("status %s: no memory folder at %s (run memfsd sync --agent %s)", x, cfg.MemoryDir(x), x)
			}
			continue
		}
		st, err := agent.ReadStatus(cfg, x)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	if out == nil {
		out = []agent.Status{}
	}
	return out, nil
}
