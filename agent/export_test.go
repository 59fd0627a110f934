package agent

import "path/filepath"

// SetBeforeToolWrite makes f run in each memory-tool call between its
// read and its write.
func SetBeforeToolWrite(a *Agent, f func()) { a.beforeToolWrite = f }

// SearchBuilt reports whether the agent holds a search index now.
func SearchBuilt(a *Agent) bool {
	return a.search.Built()
}

// SearchReindexed is how many paths the agent's search index has been
// handed (built or brought up to HEAD) since it started.
func SearchReindexed(a *Agent) int {
	return a.search.Reindexed()
}

// SearchLoaded is how many times the agent's search index was loaded
// from disk rather than built from git.
func SearchLoaded(a *Agent) int { return a.search.Loaded() }

// SearchIndexFile is where the agent keeps its search index on disk.
func SearchIndexFile(a *Agent) string { return filepath.Join(a.folder, searchIndexFile) }
