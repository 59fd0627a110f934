package shared

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/memfsd/memfsd/agent"
	"github.com/memfsd/memfsd/embedded"
)

// Shared memory repositories (letta-code's shared-memory): an operator
// attaches a repository by name to several agents; each attachment says
// what the agent may do with it. The attachments are operator records
// under <home>/agents/<id>/ (out of the agent's reach); the repository's
// remote is recorded once per home under <home>/shared/<name>/.

// WritePolicy is what an attached agent may do with a shared repository.
type WritePolicy string

// Write policies of an attachment.
const (
	// WriteAllow: the agent's writes go to the shared branch.
	WriteAllow WritePolicy = "allow"
	// WritePropose: the agent's writes go to a branch
	// proposals/<agent>/<stamp> on the shared remote; an operator merges.
	WritePropose WritePolicy = "propose"
	// WriteDeny: the agent reads only; its writes are refused or undone.
	WriteDeny WritePolicy = "deny"
)

// Attachment is one shared repository attached to one agent.
type Attachment struct {
	Name       string      `json:"name"`
	Write      WritePolicy `json:"write"`
	RemoteURL  string      `json:"remote_url"`
	AttachedAt time.Time   `json:"attached_at"`
}

// attachmentsFile, under <home>/agents/<id>/, lists the agent's
// attachments (an operator record, like remote-url and the budget).
const attachmentsFile = "shared.json"

// sharedRemoteFile, under <home>/shared/<name>/, is the repository's
// remote, fixed by its first attachment in this home.
const sharedRemoteFile = "remote-url"

// ErrSharedRemoteConflict: the name is attached in this home with another
// remote URL.
var ErrSharedRemoteConflict = errors.New("shared repository attached with another remote")

var sharedNamePattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// ValidateSharedName checks a shared repository's name as letta-code does:
// 1-64 characters from A-Z a-z 0-9 . _ -, not . or .., not "memory".
func ValidateSharedName(name string) error {
	if !sharedNamePattern.MatchString(name) || name == "." || name == ".." || strings.EqualFold(name, "memory") {
		return fmt.Errorf("shared repository name %q: want 1-64 characters from A-Z a-z 0-9 . _ - (not ., .. or memory)", name)
	}
	return nil
}

// ParseWritePolicy checks a policy ("" is allow).
func ParseWritePolicy(s string) (WritePolicy, error) {
	switch WritePolicy(s) {
	case "":
		return WriteAllow, nil
	case WriteAllow, WritePropose, WriteDeny:
		return WritePolicy(s), nil
	}
	return "", fmt.Errorf("write %q: want allow, propose or deny", s)
}

// attachMu serialises attachment records in this process.
var attachMu sync.Mutex

// ReadAttachments lists agent id's attachments, sorted by name.
func ReadAttachments(cfg *agent.Config, id string) ([]Attachment, error) {
	if err := agent.ValidateID(id); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(cfg.Home, "agents", id, attachmentsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read shared attachments of %s: %w", id, err)
	}
	var out []Attachment
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("read shared attachments of %s: %s is damaged (fix or remove it, then attach again): %w", id, attachmentsFile, err)
	}
	slices.SortFunc(out, func(x, y Attachment) int { return strings.Compare(x.Name, y.Name) })
	return out, nil
}

// Attach records shared repository at.Name for agent id with policy
// at.Write (replacing an earlier attachment of that name). The remote is
// at.RemoteURL, else the one this home already has for the name, else
// letta-code's default for id; a name already attached here with another
// URL is ErrSharedRemoteConflict (one name, one repository per home).
func Attach(cfg *agent.Config, id string, at Attachment) (Attachment, error) {
	if err := agent.ValidateID(id); err != nil {
		return at, err
	}
	if err := ValidateSharedName(at.Name); err != nil {
		return at, err
	}
	w, err := ParseWritePolicy(string(at.Write))
	if err != nil {
		return at, fmt.Errorf("shared %s: %w", at.Name, err)
	}
	at.Write = w
	attachMu.Lock()
	defer attachMu.Unlock()
	known := readSharedRemote(cfg, at.Name)
	switch {
	case at.RemoteURL != "":
		if at.RemoteURL, err = checkSharedURL(at.RemoteURL); err != nil {
			return at, fmt.Errorf("shared %s: %w", at.Name, err)
		}
		if known != "" && known != at.RemoteURL {
			return at, fmt.Errorf("shared %s: %w: %s here, not %s (detach it from every agent and remove %s to move it)",
				at.Name, ErrSharedRemoteConflict, agent.RedactURL(known), agent.RedactURL(at.RemoteURL), cfg.SharedDir(at.Name))
		}
	case known != "":
		at.RemoteURL = known
	default:
		if at.RemoteURL, err = cfg.DefaultSharedURL(id, at.Name); err != nil {
			return at, err
		}
	}
	if known == "" {
		if err := os.MkdirAll(filepath.Join(cfg.Home, "shared"), 0o700); err != nil {
			return at, fmt.Errorf("shared %s: %w", at.Name, err)
		}
		if err := agent.WriteRecord(filepath.Join(cfg.SharedDir(at.Name), sharedRemoteFile), []byte(at.RemoteURL+"\n")); err != nil {
			return at, fmt.Errorf("shared %s: record the remote: %w", at.Name, err)
		}
	}
	if err := cfg.EnsurePrivateDirs(id); err != nil {
		return at, fmt.Errorf("shared %s: %w", at.Name, err)
	}
	list, err := ReadAttachments(cfg, id)
	if err != nil {
		return at, err
	}
	at.AttachedAt = time.Now().UTC().Truncate(time.Second)
	list = slices.DeleteFunc(list, func(x Attachment) bool { return x.Name == at.Name })
	list = append(list, at)
	return at, writeAttachments(cfg, id, list)
}

// Detach drops agent id's attachment of name; false when there was none.
// The shared clone and the agent's view stay on disk (opening never
// destroys; a later attach takes them up again).
func Detach(cfg *agent.Config, id, name string) (bool, error) {
	if err := ValidateSharedName(name); err != nil {
		return false, err
	}
	attachMu.Lock()
	defer attachMu.Unlock()
	list, err := ReadAttachments(cfg, id)
	if err != nil {
		return false, err
	}
	n := len(list)
	list = slices.DeleteFunc(list, func(x Attachment) bool { return x.Name == name })
	if len(list) == n {
		return false, nil
	}
	return true, writeAttachments(cfg, id, list)
}

func writeAttachments(cfg *agent.Config, id string, list []Attachment) error {
	slices.SortFunc(list, func(x, y Attachment) int { return strings.Compare(x.Name, y.Name) })
	if list == nil {
		list = []Attachment{}
	}
	data, _ := json.MarshalIndent(list, "", "  ")
	if err := agent.WriteRecord(filepath.Join(cfg.Home, "agents", id, attachmentsFile), append(data, '\n')); err != nil {
		return fmt.Errorf("record shared attachments of %s: %w", id, err)
	}
	return nil
}

func readSharedRemote(cfg *agent.Config, name string) string {
	data, err := os.ReadFile(filepath.Join(cfg.SharedDir(name), sharedRemoteFile))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// checkSharedURL validates an operator's shared remote as a per-agent
// remote is validated (http(s), a host, no credentials or query), or an
// embedded URL (the tests' and a server-less home's).
func checkSharedURL(raw string) (string, error) {
	if strings.HasPrefix(raw, embedded.Scheme+"://") {
		return raw, nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("remote_url %q: want http(s)://host[:port]/path, no credentials or query (the token comes from MEMFSD_TOKEN)", agent.RedactURL(raw))
	}
	return u.String(), nil
}
