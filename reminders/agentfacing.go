package reminders

import (
	"path/filepath"
	"strings"
)

// AgentFacing is msg as the agent may read it, for the memory folder
// memDir
// (<home>/agents/<id>/memory or <home>/shared/<name>/memory).
func AgentFacing(msg, memDir string) string {
	if memDir == "" || !filepath.IsAbs(memDir) {
		return msg
	}
	unit := filepath.Dir(memDir)
	home := filepath.Dir(filepath.Dir(unit))
	msg = strings.ReplaceAll(msg, memDir, "/memories")
	msg = strings.ReplaceAll(msg, unit+string(filepath.Separator)+"shared"+string(filepath.Separator), "shared/")
	if home != string(filepath.Separator) && home != "." {
		msg = strings.ReplaceAll(msg, home, "<memfsd home>")
	}
	return msg
}
