package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/memfsd/memfsd/gitmem"
)

// blocksFile, beside operatorFile and as far out of the agent's reach,
// holds the operator's block-set approvals (SPEC §8: bound to the remote
// tip they were made against, ended when their content is on the remote
// or superseded there).
const blocksFile = "operator-blocks.json"

// blockApproval is one `block set`: the operator set Path to Blob (a
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
type blockApproval struct {
	Path string `json:"path"`
	Blob string `json:"blob"`
	Base string `json:"base"`
	Prev string `json:"prev,omitempty"`
}

// BlockSetOutcome is what became of the latest block set of a path.
type BlockSetOutcome struct {
	// State is "pending" (not on the remote yet), "delivered" or
	// "superseded" (the path changed on the remote first: the block set
	// did not take effect).
	State string `json:"state"`
	// Reason says why a superseded block set did not take effect.
	Reason string `json:"reason,omitempty"`
}

func (a *Agent) blocksPath() string {
	return filepath.Join(a.folder, blocksFile)
}

// readBlockApprovals reads the record (none when absent or unreadable:
// an approval that cannot be read lets nothing through).
func (a *Agent) readBlockApprovals() []blockApproval {
	var out []blockApproval
	if data, err := os.ReadFile(a.blocksPath()); err == nil {
		_ = json.Unmarshal(data, &out)
	}
	return out
}

func (a *Agent) writeBlockApprovals(aps []blockApproval) error {
	p := a.blocksPath()
	if len(aps) == 0 {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("record block approvals: %w", err)
		}
		return nil
	}
	data, _ := json.Marshal(aps)
	if err := writeRecord(p, data); err != nil {
		return fmt.Errorf("record block approvals: %w", err)
	}
	return nil
}

// approveBlock records that the operator set rel to content against the
// remote tip base; it replaces an earlier approval of rel (the latest
// block set only: the agent cannot bring back an older one).
//
// prev is the version the change replaces (see blockApproval.Prev); an
// earlier approval of rel still waiting for the remote's tip keeps its own
// prev: that is the version the remote must still have.
func (a *Agent) approveBlock(rel string, content []byte, base, prev plumbing.Hash) error {
	a.approvalsMu.Lock()
	defer a.approvalsMu.Unlock()
	old := a.readBlockApprovals()
	ap := blockApproval{
		Path: rel,
		Blob: plumbing.ComputeHash(plumbing.BlobObject, content).String(),
		Base: base.String(),
	}
	if base.IsZero() {
		ap.Prev = prev.String()
		for _, x := range old {
			if x.Path == rel && plumbing.NewHash(x.Base).IsZero() && x.Prev != "" {
				ap.Prev = x.Prev
			}
		}
	}
	aps := slices.DeleteFunc(old, func(x blockApproval) bool { return x.Path == rel })
	aps = append(aps, ap)
	if a.blockOutcomes == nil {
		a.blockOutcomes = map[string]BlockSetOutcome{}
	}
	a.blockOutcomes[rel] = BlockSetOutcome{State: "pending"}
	if err := a.writeBlockApprovals(aps); err != nil {
		return fmt.Errorf("record operator change of %s: %w", rel, err)
	}
	return nil
}

// liveBlockApprovals returns, for a push starting at remote, the blob id
// each path's approval lets through, and removes from the record the
// approvals that ended: delivered (the remote has the content) or
// superseded (the path changed on the remote since the approval's tip, or
// that tip is not in the remote's history any more).
func (a *Agent) liveBlockApprovals(remote gitmem.OutgoingRemote) (map[string]string, error) {
	a.approvalsMu.Lock()
	defer a.approvalsMu.Unlock()
	aps := a.readBlockApprovals()
	if len(aps) == 0 {
		return nil, nil
	}
	live := map[string]string{}
	kept := aps[:0:0]
	changed := false
	if a.blockOutcomes == nil {
		a.blockOutcomes = map[string]BlockSetOutcome{}
	}
	for _, ap := range aps {
		id, mode, err := remote.Entry(ap.Path)
		if err != nil {
			return nil, err
		}
		if id.String() == ap.Blob && mode == filemode.Regular {
			a.log.Info("operator's block set is on the remote: approval ended", "path", ap.Path)
			a.blockOutcomes[ap.Path] = BlockSetOutcome{State: "delivered"}
			continue
		}
		base := plumbing.NewHash(ap.Base)
		if base.IsZero() && !remote.Tip.IsZero() {
			// Made before the remote's tip was known: bound to this
			// one if the remote still has what the operator replaced.
			if ap.Prev == "" || id.String() != ap.Prev {
				reason := fmt.Sprintf("%s changed on the remote (at %s) before memfsd had learned the remote's tip; set the block again", ap.Path, short(remote.Tip))
				a.log.Warn("operator's block set was superseded on the remote: approval ended", "path", ap.Path, "approved_at", "(remote tip not known yet)", "remote", remote.Tip.String())
				a.blockOutcomes[ap.Path] = BlockSetOutcome{State: "superseded", Reason: reason}
				continue
			}
			a.log.Info("operator's block set bound to the remote's tip, learned after it was made", "path", ap.Path, "remote", remote.Tip.String())
			ap.Base, base, changed = remote.Tip.String(), remote.Tip, true
		}
		ok, err := remote.Unchanged(base, ap.Path)
		if err != nil {
			return nil, err
		}
		if !ok {
			a.log.Warn("operator's block set was superseded on the remote: approval ended", "path", ap.Path, "approved_at", ap.Base, "remote", remote.Tip.String())
			a.blockOutcomes[ap.Path] = BlockSetOutcome{State: "superseded",
				Reason: fmt.Sprintf("%s changed on the remote (at %s) since the block set was made against %s; set the block again", ap.Path, short(remote.Tip), short(base))}
			continue
		}
		live[ap.Path] = ap.Blob
		kept = append(kept, ap)
	}
	if changed || len(kept) != len(aps) {
		if err := a.writeBlockApprovals(kept); err != nil {
			return nil, err
		}
	}
	return live, nil
}

// BlockSetOutcome reports what became of the latest block set of rel that
// this process made or saw end: pending, delivered or superseded (with the
// reason). A path with an approval on record is pending.
func (a *Agent) BlockSetOutcome(rel string) BlockSetOutcome {
	a.approvalsMu.Lock()
	var blob string
	for _, ap := range a.readBlockApprovals() {
		if ap.Path == rel {
			blob = ap.Blob
		}
	}
	o, known := a.blockOutcomes[rel]
	a.approvalsMu.Unlock()
	if blob != "" {
		// The approval ends at the next push; the remote's tip as last
		// known may already have the content. (Read without approvalsMu:
		// a push holds the repository's lock, then takes approvalsMu.)
		if repo := a.repository(); repo != nil {
			if data, ok, err := repo.RemoteFile(rel); err == nil && ok && plumbing.ComputeHash(plumbing.BlobObject, data).String() == blob {
				return BlockSetOutcome{State: "delivered"}
			}
		}
		return BlockSetOutcome{State: "pending"}
	}
	if known {
		return o
	}
	return BlockSetOutcome{State: "delivered"}
}

func short(h plumbing.Hash) string {
	if h.IsZero() {
		return "(none)"
	}
	return h.String()[:7]
}
