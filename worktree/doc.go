// Package worktree owns every touch of the agent's memory folder; this file
// holds the one rule of what a memory path is.
package worktree
