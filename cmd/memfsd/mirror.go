package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/mirror"
)

// newMirrorCmd is `memfsd mirror set|unset|status|push`: the agent's
// mirror remote (issue 22), through a running daemon's admin socket, else
// on disk.
func newMirrorCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mirror",
		Short: "The agent's mirror remote: a copy of the primary, pushed after each primary push",
	}
	var id, rawURL string
	var asJSON, force bool
	var wait time.Duration
	checkID := func() error {
		if err := agent.ValidateID(id); err != nil {
			return fmt.Errorf("flag --agent: %w", err)
		}
		return nil
	}
	set := &cobra.Command{
		Use:   "set --agent ID --url URL",
		Short: "Operator: mirror the agent's memory to URL, http(s) only (replaces --mirror-template's for this agent)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkID(); err != nil {
				return err
			}
			body, _ := json.Marshal(map[string]string{"url": rawURL})
			return g.mirrorAdmin(cmd.OutOrStdout(), "PUT", id, string(body), func(cfg *agent.Config) error {
				return mirror.SetOnDisk(cfg, id, rawURL)
			})
		},
	}
	set.Flags().StringVar(&rawURL, "url", "", "the mirror's URL: http:// or https:// only (not ssh or file), http(s)://host[:port]/path.git, no credentials (env MEMFSD_URL)")
	unset := &cobra.Command{
		Use:   "unset --agent ID",
		Short: "Operator: stop mirroring the agent (also one from --mirror-template); the mirror keeps what it has",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkID(); err != nil {
				return err
			}
			return g.mirrorAdmin(cmd.OutOrStdout(), "DELETE", id, "", func(cfg *agent.Config) error {
				return mirror.UnsetOnDisk(cfg, id)
			})
		},
	}
	status := &cobra.Command{
		Use:   "status --agent ID [--json]",
		Short: "The mirror's state, last pushed tip, pending commits, last error and push log",
		Long:  "Exit 0; 2 when the mirror's last push failed.",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkID(); err != nil {
				return err
			}
			var out struct {
				Mirror *agent.MirrorStatus `json:"mirror"`
			}
			code, err := g.agentClient(id, 10*time.Second).do("GET", "/v1/agents/"+id+"/mirror", nil, &out)
			var unreachable errUnreachable
			switch {
			case errors.As(err, &unreachable) || (err == nil && code == 404):
				cfg, err := g.config()
				if err != nil {
					return err
				}
				if out.Mirror, err = mirror.ReadStatus(cfg, id); err != nil {
					return fmt.Errorf("mirror status %s: %w", id, err)
				}
			case err != nil:
				return err
			case code != 200:
				return fmt.Errorf("mirror status %s: daemon answered %d", id, code)
			}
			w := cmd.OutOrStdout()
			if asJSON {
				printJSON(w, out.Mirror)
			} else {
				printMirror(w, out.Mirror, true)
			}
			if out.Mirror != nil && out.Mirror.LastError != nil {
				return exitCode(2)
			}
			return nil
		},
	}
	status.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	push := &cobra.Command{
		Use:   "push --agent ID [--force] [--wait 30s]",
		Short: "Operator: push the primary's tip to the mirror now",
		Long: "Exit 0 pushed (or already there); 1 failed, class and next step on stderr.\n" +
			"--force overwrites a mirror that has commits the primary does not.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkID(); err != nil {
				return err
			}
			body := fmt.Sprintf(`{"force": %t}`, force)
			var out struct {
				Finished bool                `json:"finished"`
				Push     agent.MirrorPush    `json:"push"`
				Mirror   *agent.MirrorStatus `json:"mirror"`
				Error    string              `json:"error"`
			}
			c := g.adminClient(wait + time.Minute)
			code, err := c.do("POST", fmt.Sprintf("/v1/agents/%s/mirror/push?wait=%s", id, wait), strings.NewReader(body), &out)
			var unreachable errUnreachable
			switch {
			case errors.As(err, &unreachable) || (err == nil && code == 404):
				if berr := g.besideDaemon("mirror push", id, err == nil); berr != nil {
					return berr
				}
				cfg, err := g.config()
				if err != nil {
					return err
				}
				ctx, cancel := context.WithTimeout(cmd.Context(), wait)
				defer cancel()
				out.Push, err = mirror.PushOnDisk(ctx, cfg, id, force)
				if err != nil && out.Push.Outcome == "" {
					return err
				}
			case err != nil:
				return err
			case code == 202:
				fmt.Fprintf(cmd.OutOrStdout(), "the push goes on in the daemon past --wait %s; see memfsd mirror status --agent %s%s\n", wait, id, g.homeArg())
				return nil
			case code != 200:
				return fmt.Errorf("mirror push %s: daemon answered %d: %s", id, code, out.Error)
			}
			return printPush(cmd, out.Push)
		},
	}
	push.Flags().BoolVar(&force, "force", false, "overwrite a mirror that has commits the primary does not")
	push.Flags().DurationVar(&wait, "wait", 30*time.Second, "how long to wait for the push")
	for _, c := range []*cobra.Command{set, unset, status, push} {
		c.Flags().StringVar(&id, "agent", "", "agent id (env MEMFSD_AGENT)")
	}
	cmd.AddCommand(set, unset, status, push)
	return cmd
}

// mirrorAdmin sends a set or unset to the admin socket, or does it on
// disk (onDisk) when no daemon runs or it does not manage the agent.
func (g *globals) mirrorAdmin(w io.Writer, method, id, body string, onDisk func(*agent.Config) error) error {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	var out struct {
		Mirror *agent.MirrorStatus `json:"mirror"`
		Error  string              `json:"error"`
	}
	code, err := g.adminClient(30*time.Second).do(method, "/v1/agents/"+id+"/mirror", rd, &out)
	var unreachable errUnreachable
	switch {
	case err == nil && code == 200:
		printMirror(w, out.Mirror, false)
		return nil
	case err == nil && code != 404:
		return fmt.Errorf("mirror %s: daemon answered %d: %s", id, code, out.Error)
	case err != nil && !errors.As(err, &unreachable):
		return err
	}
	cfg, err := g.config()
	if err != nil {
		return err
	}
	if err := onDisk(cfg); err != nil {
		return err
	}
	m, err := mirror.ReadStatus(cfg, id)
	if err != nil {
		// Set before the first clone: nothing to show yet.
		fmt.Fprintf(w, "recorded; memfsd uses it from the agent's next start\n")
		return nil
	}
	printMirror(w, m, false)
	return nil
}

func printMirror(w io.Writer, m *agent.MirrorStatus, withLog bool) {
	if m == nil {
		fmt.Fprintln(w, "mirror: none")
		return
	}
	fmt.Fprintf(w, "mirror: %s (%s)\nstate: %s\nlast pushed tip: %s\nprimary tip: %s\npending: %s\n",
		m.URL, m.Source, m.State, orNone(m.LastPushedTip), orNone(m.PrimaryTip), commits(m.Pending))
	if m.LastError != nil {
		fmt.Fprintf(w, "last error: %s: %s\nnext step: %s\n", m.LastError.Class, m.LastError.Message, m.LastError.NextStep)
	}
	if withLog && len(m.Log) > 0 {
		fmt.Fprintln(w, "log:")
		for _, e := range m.Log {
			what := fmt.Sprintf("%s..%s, %s", short(e.From), short(e.Tip), commits(e.Commits))
			if e.Outcome == "failed" {
				what = e.Class + ": " + e.Error
			}
			fmt.Fprintf(w, "  %s  %-10s %5d ms  %s\n", e.At.Format(time.RFC3339), e.Outcome, e.TookMS, what)
		}
	}
}

func printPush(cmd *cobra.Command, e agent.MirrorPush) error {
	w := cmd.OutOrStdout()
	switch e.Outcome {
	case "failed":
		fmt.Fprintf(cmd.ErrOrStderr(), "memfsd: mirror push failed: %s\nclass: %s\nnext step: %s\n", e.Error, e.Class, e.NextStep)
		return exitCode(1)
	case "":
		fmt.Fprintln(w, "nothing to mirror: the primary has no commit yet")
	default:
		fmt.Fprintf(w, "%s: %s..%s, %s in %d ms\n", e.Outcome, short(e.From), short(e.Tip), commits(e.Commits), e.TookMS)
	}
	return nil
}

// commits is "1 commit" or "N commits".
func commits(n int) string {
	if n == 1 {
		return "1 commit"
	}
	return fmt.Sprintf("%d commits", n)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func short(h string) string {
	if len(h) > 7 {
		return h[:7]
	}
	return orNone(h)
}
