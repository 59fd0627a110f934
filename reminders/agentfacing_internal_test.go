package reminders

import "testing"

func TestAgentFacing_NoHostPaths(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ msg, dir, want string }{
		{"commit a.md: write pack: open /h/agents/a/memory/.git/objects/pack/x: no space left on device", "/h/agents/a/memory",
			"commit a.md: write pack: open /memories/.git/objects/pack/x: no space left on device"},
		{"take /h/agents/a/shared/team/notes.md: denied", "/h/agents/a/memory", "take shared/team/notes.md: denied"},
		{"open /h/agents/a/records/x.json: permission denied", "/h/agents/a/memory", "open <memfsd home>/agents/a/records/x.json: permission denied"},
		{"commit: open /h/shared/team/memory/.git/index.lock: exists", "/h/shared/team/memory", "commit: open /memories/.git/index.lock: exists"},
		{"plain", "", "plain"},
	} {
		if got := AgentFacing(c.msg, c.dir); got != c.want {
			t.Errorf("AgentFacing(%q, %q) = %q, want %q", c.msg, c.dir, got, c.want)
		}
	}
}
