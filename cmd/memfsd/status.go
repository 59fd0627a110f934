package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/mirror"
)

func newStatusCmd(g *globals) *cobra.Command {
	var id string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [--agent ID] [--json]",
		Short: "State of one or all agents, shared repositories and mirrors (from the daemon, or read from disk when none runs)",
		Long: "State of one or all agents, and with no --agent of the daemon's shared repositories, one line each:\n" +
			"the state, what waits on the operator (holds, rejections, a token file problem), the last error\n" +
			"with its class and next step; a mirror has a line of its own. An agent on disk that the running\n" +
			"daemon does not manage is `unmanaged`. Exit 0; 2 when an agent is not clean.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if id != "" {
				if err := agent.ValidateID(id); err != nil {
					return fmt.Errorf("flag --agent: %w", err)
				}
			}
			sts, shared, err := g.allStatuses(id)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if id != "" && len(sts) == 1 {
					printJSON(out, sts[0])
				} else {
					// One array: the agents, then the shared
					// repositories (kind "shared").
					all := slices.Clone(sts)
					for _, s := range shared {
						s.Kind = "shared"
						all = append(all, s)
					}
					printJSON(out, all)
				}
			} else {
				printStatusTable(out, sts, shared)
				for _, s := range sts {
					if pg := s.PersonGitInProgress; pg != nil {
						fmt.Fprintf(out, "%s: %s\n", s.Agent, agent.OneLine(pg.Message))
					}
				}
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

// printStatusTable writes one line per agent, shared repository and
// mirror; nothing inside a cell can break its line (agent.OneLine).
func printStatusTable(out io.Writer, sts, shared []agent.Status) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tNAME\tSTATE\tAHEAD\tBEHIND\tDIRTY\tCONFLICTS\tWAITING ON THE OPERATOR\tLAST ERROR")
	row := func(kind string, s agent.Status) {
		waiting := "-"
		if len(s.Waiting) > 0 {
			waiting = strings.Join(s.Waiting, "; ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", kind, agent.OneLine(s.Agent), agent.OneLine(s.State),
			s.Ahead, s.Behind, len(s.Dirty), len(s.Conflicts), agent.OneLine(waiting), agent.ErrorLine(s.LastError))
		if m := s.Mirror; m != nil {
			fmt.Fprintf(tw, "mirror\t%s\t%s\t%d\t-\t-\t-\t-\t%s\n", agent.OneLine(s.Agent+" -> "+m.URL), agent.OneLine(m.State),
				m.Pending, agent.ErrorLine(m.LastError))
		}
	}
	for _, s := range sts {
		row("agent", s)
	}
	for _, s := range shared {
		row("shared", s)
	}
	tw.Flush()
}

// statuses asks the daemon, or reads the folders when no daemon answers.
func (g *globals) statuses(id string) ([]agent.Status, error) {
	sts, _, err := g.allStatuses(id)
	return sts, err
}

// allStatuses asks the daemon for its agents (and, for all, its shared
// repositories), or reads the folders when no daemon answers. An agent on
// disk that a running daemon does not manage is read from disk and marked
// `unmanaged`: nothing syncs it.
func (g *globals) allStatuses(id string) ([]agent.Status, []agent.Status, error) {
	c := g.client(g.listenAddr(g.homeDir()), 30*time.Second)
	var list struct {
		Agents []agent.Status `json:"agents"`
		Shared []agent.Status `json:"shared"`
	}
	daemonRuns := false
	if id != "" {
		ac := g.agentClient(id, 30*time.Second)
		var st agent.Status
		code, err := ac.do("GET", "/v1/agents/"+id+"/status", nil, &st)
		if err == nil && code == 200 {
			return []agent.Status{st}, nil, nil
		}
		if code == http.StatusUnauthorized {
			return nil, nil, err
		}
		if err == nil && code != 404 {
			return nil, nil, fmt.Errorf("status of agent %s: daemon answered %d", id, code)
		}
		// Its own socket did not answer: does a daemon run at all?
		code, err = c.do("GET", "/v1/agents", nil, &list)
		daemonRuns = err == nil && code == 200
	} else {
		code, err := c.do("GET", "/v1/agents", nil, &list)
		if code == http.StatusUnauthorized {
			return nil, nil, err
		}
		daemonRuns = err == nil && code == 200
	}
	managed := map[string]bool{}
	for _, st := range list.Agents {
		managed[st.Agent] = true
	}
	// No daemon, an agent it does not manage, or agents on disk it does
	// not list: read from disk.
	cfg, err := g.config()
	if err != nil {
		return nil, nil, err
	}
	ids := []string{id}
	if id == "" {
		ids = nil
		entries, _ := os.ReadDir(filepath.Join(cfg.Home, "agents"))
		for _, e := range entries {
			if e.IsDir() && !managed[e.Name()] && agent.ValidateID(e.Name()) == nil {
				ids = append(ids, e.Name())
			}
		}
	}
	out := list.Agents
	if id != "" {
		out = nil
	}
	for _, x := range ids {
		if _, err := os.Stat(filepath.Join(cfg.MemoryDir(x), ".git", "HEAD")); err != nil {
			if id != "" {
				managedBy := "no memfsd runs on this home"
				if daemonRuns {
					managedBy = "the running memfsd does not manage it"
				}
				return nil, nil, fmt.Errorf("no agent %q: no memory folder at %s and %s (memfsd sync --agent %s, or PUT /v1/agents/%s on the admin socket, starts one)", x, cfg.MemoryDir(x), managedBy, x, x)
			}
			continue
		}
		// The mirror's part of the status from the same repository
		// (package mirror sits above agent).
		st, err := agent.ReadStatus(cfg, x, mirror.StatusPart)
		if err != nil {
			return nil, nil, fmt.Errorf("agent %s: %w", x, err)
		}
		if st.Mirror != nil {
			st.Mirror.Log = nil
		}
		if daemonRuns {
			st.State = agent.StateUnmanaged
			st.Waiting = append(st.Waiting, "unmanaged: the running memfsd does not sync this agent (PUT /v1/agents/"+x+" on the admin socket, or run --agent "+x+")")
		} else {
			// The state is the folder's; say that nothing syncs it now.
			st.Waiting = append(st.Waiting, "no memfsd runs on this home: read from disk; nothing syncs this agent until memfsd run or memfsd sync --agent "+x)
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b agent.Status) int { return strings.Compare(a.Agent, b.Agent) })
	if out == nil {
		out = []agent.Status{}
	}
	var shared []agent.Status
	if id == "" && daemonRuns {
		shared = list.Shared
		if shared == nil {
			shared = []agent.Status{}
		}
	}
	return out, shared, nil
}
