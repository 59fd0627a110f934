package mcpserver

// ServerCount is how many session servers the host keeps in step (tells
// of changed files).
func ServerCount(h *Host) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers)
}
