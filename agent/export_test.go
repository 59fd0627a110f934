package agent

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
