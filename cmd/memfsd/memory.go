package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"

	"github.com/spf13/cobra"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/memtool"
)

func newMemoryCmd(g *globals) *cobra.Command {
	var id, key, dialectName, tool, shared string
	cmd := &cobra.Command{
		Use:   "memory --agent ID [--dialect letta-code] [--tool memory_apply_patch] < input.json",
		Short: "One memory-tool call: JSON input on stdin, result text on stdout",
		Long: "One memory-tool call: JSON input on stdin, result text on stdout.\n" +
			"Dialects: Anthropic's memory_20250818 (the default) and letta-code's memory and\n" +
			"memory_apply_patch tools (--dialect letta-code, or \"dialect\": \"letta-code\" in the\n" +
			"input; --tool memory_apply_patch, or \"tool\", for the patch tool). Without a\n" +
			"dialect, a call using letta-code's field names (file_path, old_string, input, ...)\n" +
			"is taken as letta-code's.\n" +
			"Goes through the daemon when one runs, directly otherwise. Exit 0 ok, 1 tool error.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := agent.ValidateID(id); err != nil {
				return fmt.Errorf("flag --agent: %w", err)
			}
			data, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), 8<<20))
			if err != nil {
				return fmt.Errorf("read stdin: %w", err)
			}
			dialect, err := memtool.ParseDialect(dialectName)
			if err != nil {
				return fmt.Errorf("flag --dialect: %w", err)
			}
			in, err := memtool.DecodeCall(data, dialect, tool)
			if err != nil {
				// The tool's answer, on stdout as every answer is: a
				// harness reads the model's tool result there.
				fmt.Fprintln(cmd.OutOrStdout(), err.Error())
				return exitCode(1)
			}
			q := url.Values{}
			if dialect != "" {
				q.Set("dialect", string(dialect))
			}
			if tool != "" {
				q.Set("tool", tool)
			}
			if shared != "" {
				// A shared repository is served by the daemon only: its one
				// pipeline is there.
				q.Set("shared", shared)
			}
			route := "/v1/agents/" + id + "/memory"
			if len(q) > 0 {
				route += "?" + q.Encode()
			}
			var header http.Header
			if cmd.Flags().Changed("idempotency-key") || key != "" {
				if err := agent.ValidIdempotencyKey(key); err != nil {
					return fmt.Errorf("flag --idempotency-key: %w", err)
				}
				header = http.Header{"Idempotency-Key": {key}}
			}
			var res memtool.Result
			c := g.agentClient(id, 0)
			code, err := c.doWith("POST", route, header, bytes.NewReader(data), &res)
			var unreachable errUnreachable
			switch {
			// Directly only when the request was never sent (no daemon), or
			// the daemon does not manage this agent: never after it may
			// have applied the call.
			case shared != "" && errors.As(err, &unreachable):
				return fmt.Errorf("memory --shared %s: %w (a shared repository is written through the running daemon)", shared, err)
			case shared == "" && (errors.As(err, &unreachable) || (err == nil && code == 404)):
				if berr := g.besideDaemon("memory", id, err == nil); berr != nil {
					return berr
				}
				if res, err = runMemoryDirect(cmd, g, id, in, key); err != nil {
					return err
				}
			case err != nil:
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), res.Content)
			if res.IsError {
				return exitCode(1)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&id, "agent", "", "agent id (env MEMFSD_AGENT)")
	cmd.Flags().StringVar(&dialectName, "dialect", "", "the input's dialect: anthropic (memory_20250818, the default) or letta-code (env MEMFSD_DIALECT)")
	cmd.Flags().StringVar(&shared, "shared", "", "the call is on the agent's shared repository NAME (/memories is its clone), through the daemon (env MEMFSD_SHARED)")
	cmd.Flags().StringVar(&tool, "tool", "", "letta-code's tool: memory (the default) or memory_apply_patch (env MEMFSD_TOOL)")
	cmd.Flags().StringVar(&key, "idempotency-key", "", "apply this call at most once, also when retried after a lost answer or a restart (a harness passes the tool_use id) (env MEMFSD_IDEMPOTENCY_KEY)")
	return cmd
}

// runMemoryDirect runs the call on the folder itself (no daemon): the
// commit is made now, the push at the next sync or turn.
func runMemoryDirect(cmd *cobra.Command, g *globals, id string, in memtool.Call, key string) (memtool.Result, error) {
	cfg, err := g.config()
	if err != nil {
		return memtool.Result{}, err
	}
	a, err := openAgent(cmd.Context(), cfg, id)
	if err != nil {
		return memtool.Result{}, err
	}
	defer a.Close(context.Background())
	return a.RunCall(in, key)
}

func newRemindersCmd(g *globals) *cobra.Command {
	var id string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "reminders --agent ID",
		Short: "The system-reminder text for the agent's next turn (empty when none)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := agent.ValidateID(id); err != nil {
				return fmt.Errorf("flag --agent: %w", err)
			}
			var out struct {
				Reminders json.RawMessage `json:"reminders"`
				Text      string          `json:"text"`
			}
			c := g.agentClient(id, 0)
			code, err := c.do("GET", "/v1/agents/"+id+"/reminders", nil, &out)
			var unreachable errUnreachable
			if errors.As(err, &unreachable) || code == 404 {
				sts, err := g.statuses(id)
				if err != nil {
					return err
				}
				rs := daemonOfflineReminders(sts[0])
				out.Reminders, _ = json.Marshal(rs)
				out.Text = remindersText(rs)
			} else if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), out)
			}
			if out.Text != "" {
				fmt.Fprintln(cmd.OutOrStdout(), out.Text)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&id, "agent", "", "agent id (env MEMFSD_AGENT)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the JSON answer (env MEMFSD_JSON)")
	return cmd
}

func newBlockCmd(g *globals) *cobra.Command {
	block := &cobra.Command{Use: "block", Short: "Operator changes to the read-only blocks"}
	var id, file string
	set := &cobra.Command{
		Use:   "set persona|human --agent ID --file F|-",
		Short: "Replace the persona or human block (the operator's way in) and push it",
		Long: "Replaces one of the agent's two read-only blocks, system/persona.md (persona) or\n" +
			"system/human.md (human), which the agent itself cannot change by any route, commits\n" +
			"it as \"memfsd: operator set system/<block>.md\" authored by the operator identity\n" +
			"(--operator-name/--operator-email, default memfsd-operator), and pushes it: through\n" +
			"the daemon's admin socket when one runs, else on the repository directly.\n" +
			"\n" +
			"The text comes from --file F, or from standard input with --file -. Text without\n" +
			"front matter becomes the block's body and keeps the block's front matter from HEAD\n" +
			"(description, read_only, limit); text that starts with front matter (---) replaces\n" +
			"the whole block. At most 8 MiB.\n" +
			"\n" +
			"Exit 0 when the new block is on the remote; 1 when it did not take effect (changed on\n" +
			"the remote since: superseded) or is committed but not pushed yet (memfsd pushes it\n" +
			"later), with the reason on stderr.",
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"persona", "human"},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := agent.ValidateID(id); err != nil {
				return fmt.Errorf("flag --agent: %w", err)
			}
			if args[0] != "persona" && args[0] != "human" {
				return fmt.Errorf("block set: %q is not a block: want persona or human", args[0])
			}
			if file == "" {
				return errors.New("flag --file: required (a file, or - for standard input)")
			}
			content, err := readBlockText(cmd.InOrStdin(), file)
			if err != nil {
				return fmt.Errorf("flag --file: %w", err)
			}
			c := g.adminClient(0)
			var res json.RawMessage
			code, err := c.do("PUT", "/v1/agents/"+id+"/blocks/"+args[0], bytes.NewReader(content), &res)
			var unreachable errUnreachable
			if err == nil && code == 200 {
				printRawJSON(cmd.OutOrStdout(), res)
				return nil
			}
			if err == nil && (code == 409 || code == 202) {
				var e struct {
					Error string `json:"error"`
				}
				json.Unmarshal(res, &e)
				printRawJSON(cmd.OutOrStdout(), res)
				return errors.New(e.Error)
			}
			if err == nil && code != 404 {
				return fmt.Errorf("block set: daemon answered %d: %s", code, res)
			}
			if err != nil && !errors.As(err, &unreachable) {
				return err
			}
			if berr := g.besideDaemon("block set", id, err == nil); berr != nil {
				return berr
			}
			cfg, err := g.config()
			if err != nil {
				return err
			}
			a, err := openAgent(cmd.Context(), cfg, id)
			if err != nil {
				return err
			}
			defer a.Close(context.Background())
			rel, err := a.SetBlock(args[0], content)
			if err != nil {
				return err
			}
			if _, err := a.Sync(cmd.Context(), agent.SyncOptions{SkipScan: true}); err != nil {
				return fmt.Errorf("block set: committed %s but the push failed: %w", rel, err)
			}
			if out := a.BlockSetOutcome(rel); out.State == "superseded" {
				return fmt.Errorf("block set %s: did not take effect: %s", rel, out.Reason)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "set %s and pushed\n", rel)
			return nil
		},
	}
	set.Flags().StringVar(&id, "agent", "", "agent id (env MEMFSD_AGENT)")
	set.Flags().StringVar(&file, "file", "", "file with the block's new text, - for standard input; without front matter HEAD's is kept (env MEMFSD_FILE)")
	block.AddCommand(set)
	return block
}

// maxBlockText is the daemon's cap on a block set body (the API's 8 MiB).
const maxBlockText = 8 << 20

// readBlockText reads the operator's text from file, or from stdin when
// file is "-", refusing more than the daemon would take.
func readBlockText(stdin io.Reader, file string) ([]byte, error) {
	r := stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	content, err := io.ReadAll(io.LimitReader(r, maxBlockText+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	if len(content) > maxBlockText {
		return nil, fmt.Errorf("%s: more than %d bytes (8 MiB)", file, maxBlockText)
	}
	return content, nil
}
