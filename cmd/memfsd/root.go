package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/gitmem"
	"github.com/memfsd/memfsd/gitstore"
	"github.com/memfsd/memfsd/internal/fsperm"
	"github.com/memfsd/memfsd/memtool"
	"github.com/memfsd/memfsd/retry"
)

// globals are the flags every subcommand shares.
type globals struct {
	home         string
	baseURL      string
	template     string
	mirror       string
	mirrorToken  string
	authScheme   string
	createRemote bool
	tokenFile    string
	authorName   string
	// operatorName and operatorEmail author the operator's commits.
	operatorName, operatorEmail string
	authorEmail                 string
	logLevel                    string
	noFsync                     bool
	shareGroup                  bool
	listen                      string
	adminListen                 string
	// listenTokenFile holds the bearer token of a TCP --listen (the
	// agents' API), adminListenTokenFile that of a TCP --admin-listen (the
	// operator's): the daemon asks them, the CLI sends them. Neither opens
	// the other's listener.
	listenTokenFile      string
	adminListenTokenFile string

	noSecretGuard  bool
	personGitWait  time.Duration
	maxFileBytes   int64
	noFMRules      bool
	secretPatterns []string

	retryInitial time.Duration
	retryMax     time.Duration
	retryBudget  time.Duration
	attemptMax   time.Duration

	http gitmem.HTTPTimeouts
}

// homeDir is --home with ~ expanded.
// homeArg is " --home <home>" for a command a message tells the user to
// run, when the home is not the default.
func (g *globals) homeArg() string {
	return (&agent.Config{Home: g.homeDir()}).HomeArg()
}

func (g *globals) homeDir() string {
	home := g.home
	if strings.HasPrefix(home, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			home = filepath.Join(h, home[2:])
		}
	}
	if abs, err := filepath.Abs(home); err == nil {
		home = abs
	}
	return home
}

// listenAddr is --listen, by default unix://<home>/memfsd.sock.
func (g *globals) listenAddr(home string) string {
	if g.listen != "" {
		return g.listen
	}
	return "unix://" + filepath.Join(home, "memfsd.sock")
}

// adminAddr is --admin-listen, by default unix://<home>/admin.sock.
func (g *globals) adminAddr(home string) string {
	if g.adminListen != "" {
		return g.adminListen
	}
	return "unix://" + filepath.Join(home, "admin.sock")
}

func newRootCmd() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "memfsd",
		Short:         "Keep an AI agent's memory folder in git",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyEnv(cmd); err != nil {
				return err
			}
			if g.shareGroup {
				// The agent's folders, files and sockets are the group's too
				// (fsperm); the umask keeps git's own files in .git
				// reachable by the group as well. Records, the embedded
				// remote and the admin socket stay 0700/0600.
				fsperm.ShareGroup(true)
				syscall.Umask(0o007)
			}
			return nil
		},
	}
	home := "~/.memfsd"
	if h, err := os.UserHomeDir(); err == nil {
		home = filepath.Join(h, ".memfsd")
	}
	f := root.PersistentFlags()
	f.StringVar(&g.home, "home", home, "memfsd home: agents' memory and the embedded remote (env MEMFSD_HOME)")
	f.StringVar(&g.baseURL, "base-url", "", "remote base URL; empty = embedded remote under <home>/remote (env MEMFSD_BASE_URL, LETTA_MEMFS_BASE_URL)")
	f.StringVar(&g.template, "remote-template", "", "the agent's remote on any git host, {agent} replaced by its id, e.g. https://git.example.com/memory/{agent}.git (env MEMFSD_REMOTE_TEMPLATE); instead of --base-url")
	f.StringVar(&g.mirror, "mirror-template", "", "a mirror remote for every agent, {agent} replaced by its id, e.g. https://github.com/acme/{agent}-memory.git: each push to the primary is copied there in the background (env MEMFSD_MIRROR_TEMPLATE; per agent: memfsd mirror set)")
	f.StringVar(&g.mirrorToken, "mirror-token-file", "", "file holding the mirror's token (else env MEMFSD_MIRROR_TOKEN; without one the primary's token goes only to a mirror on the primary's host)")
	f.StringVar(&g.authScheme, "auth-scheme", agent.AuthBasic, "how the token is sent: basic (user MEMFSD_USERNAME) or bearer (env MEMFSD_AUTH_SCHEME)")
	f.BoolVar(&g.createRemote, "create-remote", false, "when the host has no repository for the agent yet, start it with the default blocks and create it by pushing (env MEMFSD_CREATE_REMOTE)")
	f.StringVar(&g.tokenFile, "token-file", "", "file holding the token, re-read when it changes and after an auth failure: a rotated token needs no restart (else env MEMFSD_TOKEN; env MEMFSD_TOKEN_FILE)")
	f.StringVar(&g.authorName, "author-name", "", "commit author name (default: the agent id)")
	f.StringVar(&g.authorEmail, "author-email", "", "commit author email (default: <agent>@memfsd.local)")
	f.StringVar(&g.operatorName, "operator-name", agent.DefaultOperatorName, "author of the operator's commits: block set, read-only blocks put back, deletions restored (env MEMFSD_OPERATOR_NAME)")
	f.StringVar(&g.operatorEmail, "operator-email", "", "email of the operator's commits (default: <operator-name>@memfsd.local; env MEMFSD_OPERATOR_EMAIL)")
	f.StringVar(&g.logLevel, "log-level", "info", "debug, info, warn or error")
	f.BoolVar(&g.shareGroup, "share-group", false, "share the agent's memory folder and sockets with memfsd's group, for an agent that runs as another user in that group: folders 0770, files 0660, the agent's sockets 0660, <home>, agents/ and agents/<id>/ 0710; read-only blocks stay read-only; default private: 0700, 0600 (env MEMFSD_SHARE_GROUP)")
	f.BoolVar(&g.noFsync, "no-fsync", false, "skip fsync of objects, refs and the memory tool's files (faster; a power cut may lose recent writes and commits)")
	f.StringVar(&g.listen, "listen", "", "the shared API, every agent's routes (a one-agent sidecar, the operator's tools; in a multi-agent daemon give each agent its own <home>/agents/<id>/memfsd.sock instead): unix:///path or 127.0.0.1:PORT (default unix://<home>/memfsd.sock; env MEMFSD_LISTEN)")
	f.StringVar(&g.adminListen, "admin-listen", "", "the operator's API (block set, accept, adding agents): unix:///path or 127.0.0.1:PORT (default unix://<home>/admin.sock, mode 0600; env MEMFSD_ADMIN_LISTEN); never give it to the agent")
	f.StringVar(&g.listenTokenFile, "listen-token-file", "", "file holding a token that every request on a TCP --listen must send as Authorization: Bearer <token> (needed for an address other than loopback; the CLI sends it too; env MEMFSD_LISTEN_TOKEN_FILE); it does not open --admin-listen")
	f.StringVar(&g.adminListenTokenFile, "admin-listen-token-file", "", "file holding the operator's own token, which every request on a TCP --admin-listen must send as Authorization: Bearer <token> (needed for an address other than loopback, and for any TCP --admin-listen when --listen-token-file is given; must differ from it; the CLI sends it too; env MEMFSD_ADMIN_LISTEN_TOKEN_FILE)")
	f.DurationVar(&g.retryInitial, "retry-initial", retry.DefaultInitial, "first wait before retrying a retryable sync failure (env MEMFSD_RETRY_INITIAL)")
	f.DurationVar(&g.retryMax, "retry-max", retry.DefaultMax, "longest wait between retries (env MEMFSD_RETRY_MAX)")
	f.DurationVar(&g.retryBudget, "retry-budget", retry.DefaultBudget, "total retry time per sync; past it commits stay local (env MEMFSD_RETRY_BUDGET)")
	f.DurationVar(&g.attemptMax, "attempt-timeout", retry.DefaultAttemptTimeout, "bound on one sync attempt, all its requests included (env MEMFSD_ATTEMPT_TIMEOUT)")
	f.DurationVar(&g.http.Dial, "http-dial-timeout", gitmem.DefaultDialTimeout, "TCP connect to the remote (env MEMFSD_HTTP_DIAL_TIMEOUT)")
	f.DurationVar(&g.http.TLSHandshake, "http-tls-timeout", gitmem.DefaultTLSHandshakeTimeout, "TLS handshake with the remote (env MEMFSD_HTTP_TLS_TIMEOUT)")
	f.DurationVar(&g.http.ResponseHeader, "http-response-timeout", gitmem.DefaultResponseHeaderTimeout, "request sent to response headers (env MEMFSD_HTTP_RESPONSE_TIMEOUT)")
	f.DurationVar(&g.http.Idle, "http-idle-timeout", gitmem.DefaultIdleTimeout, "a connection making no progress on a read or write (env MEMFSD_HTTP_IDLE_TIMEOUT)")
	f.BoolVar(&g.noFMRules, "no-frontmatter-rules", false, "accept memory files in system/ and reference/ (v2: every memory file) whose front matter breaks letta-code's rules; for folders that are not letta-code's (env MEMFSD_NO_FRONTMATTER_RULES)")
	f.DurationVar(&g.personGitWait, "person-git-wait", agent.DefaultPersonGitWait, "how long memfsd's commits and syncs wait on a person's git operation in an agent's folder (a git commit or revert with its editor open, a merge or rebase stopped) before going on (env MEMFSD_PERSON_GIT_WAIT)")
	f.Int64Var(&g.maxFileBytes, "max-file-bytes", agent.DefaultMaxFileBytes, "largest file a direct write into the memory folder commits; a bigger one is held, uncommitted, with a reminder (env MEMFSD_MAX_FILE_BYTES)")
	f.BoolVar(&g.noSecretGuard, "no-secret-guard", false, "commit and push text that looks like a credential: the memory tool's writes and direct writes (the operator's release of a held file: memfsd --no-secret-guard sync --agent ID) (env MEMFSD_NO_SECRET_GUARD)")
	f.StringArrayVar(&g.secretPatterns, "secret-pattern", nil, "extra credential pattern to refuse, name=regexp (repeatable; env MEMFSD_SECRET_PATTERN)")
	root.AddCommand(newSyncCmd(g), newRunCmd(g), newTurnCmd(g), newStatusCmd(g), newRemindersCmd(g), newMemoryCmd(g), newBlockCmd(g), newHealthCmd(g), newContextCmd(g))
	root.AddCommand(newHistoryCmd(g), newSearchCmd(g), newShowCmd(g), newBudgetCmd(g), newSharedCmd(g), newMirrorCmd(g), newMCPCmd(g))
	return root
}

// applyEnv fills every flag the command line left unset from MEMFSD_<FLAG>.
func applyEnv(cmd *cobra.Command) error {
	var firstErr error
	cmd.Flags().VisitAll(func(fl *pflag.Flag) {
		if fl.Changed || firstErr != nil {
			return
		}
		name := "MEMFSD_" + strings.ToUpper(strings.ReplaceAll(fl.Name, "-", "_"))
		v, ok := os.LookupEnv(name)
		if !ok && fl.Name == "base-url" {
			v, ok = os.LookupEnv("LETTA_MEMFS_BASE_URL")
		}
		if !ok {
			return
		}
		if err := fl.Value.Set(v); err != nil {
			firstErr = fmt.Errorf("env %s: %w", name, err)
		}
	})
	return firstErr
}

// config builds the shared agent configuration from the flags.
func (g *globals) config() (*agent.Config, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(g.logLevel)); err != nil {
		return nil, fmt.Errorf("flag --log-level: %w", err)
	}
	home := g.homeDir()
	cfg := &agent.Config{
		Home:            home,
		BaseURL:         g.baseURL,
		RemoteTemplate:  g.template,
		MirrorTemplate:  g.mirror,
		MirrorToken:     os.Getenv("MEMFSD_MIRROR_TOKEN"),
		MirrorTokenFile: g.mirrorToken, // read by Validate, re-read when it changes
		MirrorUsername:  os.Getenv("MEMFSD_MIRROR_USERNAME"),
		AuthScheme:      g.authScheme,
		CreateRemote:    g.createRemote,
		Token:           os.Getenv("MEMFSD_TOKEN"),
		TokenFile:       g.tokenFile, // read by Validate, re-read when it changes
		Username:        os.Getenv("MEMFSD_USERNAME"),
		AuthorName:      g.authorName,
		AuthorEmail:     g.authorEmail,
		OperatorName:    g.operatorName,
		OperatorEmail:   operatorEmail(g.operatorName, g.operatorEmail),
		NoFsync:         g.noFsync,
		Logger:          slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
	}
	if g.retryInitial <= 0 || g.retryMax < g.retryInitial || g.retryBudget <= 0 {
		return nil, fmt.Errorf("flags --retry-initial/--retry-max/--retry-budget: want 0 < initial <= max and budget > 0")
	}
	if g.attemptMax <= 0 {
		return nil, fmt.Errorf("flag --attempt-timeout: must be positive, got %s", g.attemptMax)
	}
	cfg.Retry = retry.Policy{Initial: g.retryInitial, Multiplier: retry.DefaultMultiplier, Max: g.retryMax, Budget: g.retryBudget, AttemptTimeout: g.attemptMax}
	for name, d := range map[string]time.Duration{"http-dial-timeout": g.http.Dial, "http-tls-timeout": g.http.TLSHandshake,
		"http-response-timeout": g.http.ResponseHeader, "http-idle-timeout": g.http.Idle} {
		if d <= 0 {
			return nil, fmt.Errorf("flag --%s: must be positive, got %s", name, d)
		}
	}
	gitmem.InstallHTTPClient(g.http)
	cfg.NoSecretGuard = g.noSecretGuard
	if g.personGitWait <= 0 {
		return nil, fmt.Errorf("flag --person-git-wait: must be positive, got %s", g.personGitWait)
	}
	cfg.PersonGitWait = g.personGitWait
	if g.maxFileBytes <= 0 {
		return nil, fmt.Errorf("flag --max-file-bytes: must be positive, got %d", g.maxFileBytes)
	}
	cfg.MaxFileBytes = g.maxFileBytes
	gitstore.SetMaxObjectSize(g.maxFileBytes) // every file it may commit can be read back
	cfg.NoFrontMatterRules = g.noFMRules
	if len(g.secretPatterns) > 0 {
		cfg.SecretPatterns = memtool.DefaultSecretPatterns()
		for _, s := range g.secretPatterns {
			p, err := memtool.ParseSecretPattern(s)
			if err != nil {
				return nil, fmt.Errorf("flag --secret-pattern: %w", err)
			}
			cfg.SecretPatterns = append(cfg.SecretPatterns, p)
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// operatorEmail is the operator identity's email: given, or made from its
// name.
func operatorEmail(name, email string) string {
	if email != "" || name == "" {
		return email
	}
	return name + "@memfsd.local"
}
