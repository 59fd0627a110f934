// Package worktree owns every touch of the agent's memory folder, a folder
// the agent also writes and may booby-trap with symbolic links:
//
//   - path.go: the one rule of what a memory path is (Check, Skip);
//   - dir.go: Dir, the folder held open by descriptor; every read, write,
//     exchange, rename, removal and listing opens its target's folder
//     beneath it with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) (or an
//     O_NOFOLLOW walk) and acts with *at calls, so a name swapped for a
//     link between a check and an act is refused by the kernel;
//   - lease.go: write leases, under which a file the agent may be writing
//     is replaced in place without losing the agent's write.
package worktree
