package agent

// SetBeforeToolWrite makes f run in each memory-tool call between its
// read and its write.
func SetBeforeToolWrite(a *Agent, f func()) { a.beforeToolWrite = f }
