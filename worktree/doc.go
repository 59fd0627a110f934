// Package worktree owns every touch of the agent's memory folder, a folder
// the agent also writes and may booby-trap with symbolic links:
//
//   - path.go: the one rule of what a memory path is (Check, Clean, Skip);
//   - dir.go: Dir, the folder held open by descriptor; every read, write,
//     exchange, rename, removal and listing opens its target's folder
//     beneath it with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) (or an
//     O_NOFOLLOW walk) and acts with *at calls, so a name swapped for a
//     link between a check and an act is refused by the kernel;
//   - lease.go: write leases, under which a file the agent may be writing
//     is replaced in place without losing the agent's write;
//   - files.go, replace.go: Files, a work file's whole life on top of a
//     Dir: the repository says what a file becomes (Put, Take, Pull,
//     CreateIfAbsent) and Files makes it so, under a lease or by
//     rename-exchange, moving aside what stands in the way as a conflict
//     copy, never calling back into the repository;
//   - journal.go, leftovers.go: the journal of in-place writes and the
//     recovery at start of what a crash cut short (RecoverTorn,
//     RecoverLeftovers);
//   - fresh.go: a clone's first checkout, written in bulk (WriteFresh).
package worktree
