// Package blockset is the operator's block-set approvals (SPEC §8): an
// operator's change of a read-only block, let through the outgoing check
// only while bound to the remote tip it was made against, ended when its
// content is on the remote or the path changed there first, and what
// became of each.
package blockset

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/memfsd/memfsd/gitmem"
)

// Approval is one `block set`: the operator set Path to Blob (a
// regular file) while the remote, as memfsd last knew it, was at Base.
// It lets Blob through the outgoing check only for a push whose remote
// tip is Base, or a descendant on which nobody changed Path since.
//
// A block set made before memfsd learned the remote's tip (right after
// start, while the first sync still runs against an empty or slow remote)
// has a zero Base: it is bound to the first remote tip a push sees,
// provided that tip has Path as Prev (the version the operator's change
// replaced; zero when absent) — otherwise somebody changed Path there
// first and the approval is superseded (issue 28).
type Approval struct {
	Path string `json:"path"`
	Blob string `json:"blob"`
	Base string `json:"base"`
	Prev string `json:"prev,omitempty"`
	// Content is the operator's bytes (their id is Blob), kept out of the
	// agent's reach: a block set the agent's history loses (its shell
	// resets the branch past the commit) is applied again from them
	// (Owed). Empty in records written before it was kept.
	Content []byte `json:"content,omitempty"`
}

// Outcome is what became of the latest block set of a path.
type Outcome struct {
	// State is "pending" (not on the remote yet), "delivered" or
	// "superseded" (the path changed on the remote first: the block set
	// did not take effect).
	State string `json:"state"`
	// Reason says why a superseded block set did not take effect, or
	// what happened to a pending one (applied again after the agent's
	// history lost it).
	Reason string `json:"reason,omitempty"`
}

// Book is an agent's approvals, kept in a record file (the file is given
// to each call) written by WriteFile, and the outcomes this process saw.
type Book struct {
	// WriteFile replaces a record file atomically.
	WriteFile func(p string, data []byte) error

	// mu serialises reading and rewriting the record.
	mu sync.Mutex
	// outcomes is what became of each path's latest block set in this
	// process (under mu).
	outcomes map[string]Outcome
}

// read reads the record (none when absent or unreadable: an approval
// that cannot be read lets nothing through).
func (b *Book) read(file string) []Approval {
	var out []Approval
	if data, err := os.ReadFile(file); err == nil {
		_ = json.Unmarshal(data, &out)
	}
	return out
}

func (b *Book) write(p string, aps []Approval) error {
	if len(aps) == 0 {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("record block approvals: %w", err)
		}
		return nil
	}
	data, _ := json.Marshal(aps)
	if err := b.WriteFile(p, data); err != nil {
		return fmt.Errorf("record block approvals: %w", err)
	}
	return nil
}

// Approve records that the operator set rel to content against the
// remote tip base; it replaces an earlier approval of rel (the latest
// block set only: the agent cannot bring back an older one).
//
// prev is the version the change replaces (see Approval.Prev); an
// earlier approval of rel still waiting for the remote's tip keeps its own
// prev: that is the version the remote must still have.
func (b *Book) Approve(file, rel string, content []byte, base, prev plumbing.Hash) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	old := b.read(file)
	ap := Approval{
		Path:    rel,
		Blob:    plumbing.ComputeHash(plumbing.BlobObject, content).String(),
		Base:    base.String(),
		Content: content,
	}
	if base.IsZero() {
		ap.Prev = prev.String()
		for _, x := range old {
			if x.Path == rel && plumbing.NewHash(x.Base).IsZero() && x.Prev != "" {
				ap.Prev = x.Prev
			}
		}
	}
	aps := slices.DeleteFunc(old, func(x Approval) bool { return x.Path == rel })
	aps = append(aps, ap)
	if b.outcomes == nil {
		b.outcomes = map[string]Outcome{}
	}
	b.outcomes[rel] = Outcome{State: "pending"}
	if err := b.write(file, aps); err != nil {
		return fmt.Errorf("record operator change of %s: %w", rel, err)
	}
	return nil
}

// Live returns, for a push starting at remote, the blob id
// each path's approval lets through, and removes from the record the
// approvals that ended: delivered (the remote has the content) or
// superseded (the path changed on the remote since the approval's tip, or
// that tip is not in the remote's history any more).
func (b *Book) Live(file string, remote gitmem.OutgoingRemote, log *slog.Logger) (map[string]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	aps := b.read(file)
	if len(aps) == 0 {
		return nil, nil
	}
	live := map[string]string{}
	kept := aps[:0:0]
	changed := false
	if b.outcomes == nil {
		b.outcomes = map[string]Outcome{}
	}
	for _, ap := range aps {
		id, mode, err := remote.Entry(ap.Path)
		if err != nil {
			return nil, err
		}
		if id.String() == ap.Blob && mode == filemode.Regular {
			log.Info("operator's block set is on the remote: approval ended", "path", ap.Path)
			b.outcomes[ap.Path] = Outcome{State: "delivered"}
			continue
		}
		base := plumbing.NewHash(ap.Base)
		if base.IsZero() && !remote.Tip.IsZero() {
			// Made before the remote's tip was known: bound to this
			// one if the remote still has what the operator replaced.
			if ap.Prev == "" || id.String() != ap.Prev {
				reason := fmt.Sprintf("%s changed on the remote (at %s) before memfsd had learned the remote's tip; set the block again", ap.Path, short(remote.Tip))
				log.Warn("operator's block set was superseded on the remote: approval ended", "path", ap.Path, "approved_at", "(remote tip not known yet)", "remote", remote.Tip.String())
				b.outcomes[ap.Path] = Outcome{State: "superseded", Reason: reason}
				continue
			}
			log.Info("operator's block set bound to the remote's tip, learned after it was made", "path", ap.Path, "remote", remote.Tip.String())
			ap.Base, base, changed = remote.Tip.String(), remote.Tip, true
		}
		ok, err := remote.Unchanged(base, ap.Path)
		if err != nil {
			return nil, err
		}
		if !ok {
			log.Warn("operator's block set was superseded on the remote: approval ended", "path", ap.Path, "approved_at", ap.Base, "remote", remote.Tip.String())
			b.outcomes[ap.Path] = Outcome{State: "superseded",
				Reason: fmt.Sprintf("%s changed on the remote (at %s) since the block set was made against %s; set the block again", ap.Path, short(remote.Tip), short(base))}
			continue
		}
		live[ap.Path] = ap.Blob
		kept = append(kept, ap)
	}
	if changed || len(kept) != len(aps) {
		if err := b.write(file, kept); err != nil {
			return nil, err
		}
	}
	return live, nil
}

// Outcome reports what became of the latest block set of rel that this
// process made or saw end: pending, delivered or superseded (with the
// reason). A path with an approval on record is pending, unless
// remoteFile (the remote's tip as last known; nil before a clone)
// already has its content.
func (b *Book) Outcome(file, rel string, remoteFile func(string) ([]byte, bool, error)) Outcome {
	b.mu.Lock()
	var blob string
	for _, ap := range b.read(file) {
		if ap.Path == rel {
			blob = ap.Blob
		}
	}
	o, known := b.outcomes[rel]
	b.mu.Unlock()
	if blob != "" {
		// The approval ends at the next push; the remote's tip as last
		// known may already have the content. (Read without approvalsMu:
		// a push holds the repository's lock, then takes approvalsMu.)
		if remoteFile != nil {
			if data, ok, err := remoteFile(rel); err == nil && ok && plumbing.ComputeHash(plumbing.BlobObject, data).String() == blob {
				return Outcome{State: "delivered"}
			}
		}
		if known && o.State == "pending" {
			return o // with what happened to it, if anything did
		}
		return Outcome{State: "pending"}
	}
	if known {
		return o
	}
	return Outcome{State: "delivered"}
}

// Rebase binds each approval on record to tip, the remote's tip after a
// push of ours landed on the tip the push's check (Live) judged, when
// same says its path is at tip as it was at the approval's base: the
// commits between are ours (an agent's commit over the block and the
// restore of it, say), not another writer's, and must not count as the
// path changed on the remote. Zero-base approvals are left as they are.
func (b *Book) Rebase(file string, tip plumbing.Hash, same func(base plumbing.Hash, path string) (bool, error), log *slog.Logger) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	aps := b.read(file)
	changed := false
	for i, ap := range aps {
		base := plumbing.NewHash(ap.Base)
		if base.IsZero() || base == tip {
			continue
		}
		ok, err := same(base, ap.Path)
		if err != nil {
			return err
		}
		if ok {
			log.Info("operator's block set rebound to the tip our push made (the path is there as the block set found it)", "path", ap.Path, "was", ap.Base, "now", tip.String())
			aps[i].Base, changed = tip.String(), true
		}
	}
	if !changed {
		return nil
	}
	return b.write(file, aps)
}

// Owed is an approval on record whose content the local history may have
// lost: the path, the operator's bytes (checked against the blob id; nil
// when the record predates kept content) and the blob id.
type Owed struct {
	Path    string
	Blob    plumbing.Hash
	Content []byte
	// Base is the remote tip the approval is bound to (zero: none).
	Base plumbing.Hash
}

// Pending lists the approvals on record (the block sets not known to be
// on the remote yet), the record's order.
func (b *Book) Pending(file string) []Owed {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Owed
	for _, ap := range b.read(file) {
		o := Owed{Path: ap.Path, Blob: plumbing.NewHash(ap.Blob), Base: plumbing.NewHash(ap.Base)}
		if ap.Content != nil && plumbing.ComputeHash(plumbing.BlobObject, ap.Content) == o.Blob {
			o.Content = ap.Content
		}
		out = append(out, o)
	}
	return out
}

// Reapplied notes that the latest block set of rel, lost from the local
// history, was committed again (why: for the status); it stays pending
// until a push carries it.
func (b *Book) Reapplied(rel, why string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.outcomes == nil {
		b.outcomes = map[string]Outcome{}
	}
	b.outcomes[rel] = Outcome{State: "pending", Reason: why}
}

// Approved reports whether the record lets blob through at rel.
func (b *Book) Approved(file, rel, blob string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ap := range b.read(file) {
		if ap.Path == rel && ap.Blob == blob {
			return true
		}
	}
	return false
}

func short(h plumbing.Hash) string {
	if h.IsZero() {
		return "(none)"
	}
	return h.String()[:7]
}
