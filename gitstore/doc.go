// Package gitstore is what lies under .git besides the work tree: the
// object store (memfsd's own small packs for each write, loose objects,
// the present-cache of what it packed itself, reads through go-git with
// the recent packs in front), the refs and their reflogs, git's lock
// protocol (<file>.lock, O_EXCL or a spare file linked into place), the
// spare files, gc.pid, and the pieces of a repack that need no repository:
// listing packs and loose objects, choosing the packs to roll up, writing
// the new pack with deltas and publishing it, and the background work a
// repository's Close cancels and waits for. It knows git's formats
// (package gitfmt/...) and nothing of the work tree or of syncing: the
// repository (package gitmem) holds the lock that orders its writes and
// decides when they happen.
package gitstore
