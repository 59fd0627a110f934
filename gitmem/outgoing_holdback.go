package gitmem

import (
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/memfsd/memfsd/gitfmt/index"
	"github.com/memfsd/memfsd/gitstore"
)

// holdBack commits, on top of tip, one `memfsd: hold back <path>` commit
// per path (OutgoingPlan.HoldBack): the remote's version back in the tree
// and in the index, the work tree left as the agent has it. The index entry
// gets no stat, so the next scan hashes the file again and finds it an
// uncommitted write, which the commit's guards judge as they judge any
// direct write (held while it breaks its front matter, committed once
// fixed). Nothing the agent wrote is moved or lost; only its commit does
// not reach the remote. Called by checkOutgoing under r.mu, with the index
// lock held.
func (r *Repo) holdBack(paths []string, byPath map[string]OutgoingFile, ix *index.Index, tip, tipTree plumbing.Hash, res *CommitResult) (plumbing.Hash, plumbing.Hash, []string, error) {
	var done []string
	for _, p := range paths {
		f, ok := byPath[p]
		if !ok {
			continue
		}
		c := gitstore.Change{Path: p}
		if f.InRemote {
			c.Hash, c.Mode = f.remote.Hash, f.remote.Mode
			ix.Set(p, f.remote.Hash, f.remote.Mode, nil)
		} else {
			ix.Remove(p)
		}
		var err error
		if tip, tipTree, err = r.commitChanges(tip, tipTree, []gitstore.Change{c}, "memfsd: hold back "+p, time.Now(), res); err != nil {
			return tip, tipTree, done, err
		}
		done = append(done, p)
	}
	return tip, tipTree, done, nil
}
