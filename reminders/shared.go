package reminders

import (
	"fmt"
	"slices"
	"strings"
)

// KindSharedWriteDenied: a file the agent changed in the view of a shared
// repository it may only read was put back.
const KindSharedWriteDenied = "shared_write_denied"

// SharedNote is one thing memfsd did with a file an agent changed in its
// view of a shared repository, to be told at the agent's next turn: Kind
// is KindSharedWriteDenied, KindReadOnlyRejected, KindSecretHeld or
// KindFrontMatterHeld.
type SharedNote struct {
	Kind string `json:"kind"`
	Path string `json:"path"`
}

// Shared turns the notes of the agent's view (folder) of shared repository
// name into reminders, one per kind.
func Shared(name, folder string, notes []SharedNote) []Reminder {
	byKind := map[string][]string{}
	var kinds []string
	for _, n := range notes {
		if !slices.Contains(byKind[n.Kind], n.Path) {
			byKind[n.Kind] = append(byKind[n.Kind], n.Path)
		}
		if !slices.Contains(kinds, n.Kind) {
			kinds = append(kinds, n.Kind)
		}
	}
	var out []Reminder
	for _, k := range kinds {
		files := listEach(len(byKind[k]), 5, func(i int) string { return folder + "/" + byKind[k][i] })
		var text string
		switch k {
		case KindSharedWriteDenied:
			text = fmt.Sprintf("Your change to %s was undone: shared repository %s is read-only for you (write: deny). The file shows the shared version again; the operator keeps your text. Put your own notes in your own memory.", files, name)
		case KindReadOnlyRejected:
			text = fmt.Sprintf("Your change to the read-only block(s) %s of shared repository %s was undone: those blocks are written by the operator, who keeps your text. Put your notes in another file.", files, name)
		case KindSecretHeld:
			text = fmt.Sprintf("Not saved to shared repository %s: %s look(s) like it holds a credential. Remove the secret from the file (keep the rest) or delete the file; it is taken as soon as it is clean.", name, files)
		case KindFrontMatterHeld:
			text = fmt.Sprintf("Not saved to shared repository %s: your write to %s broke the file's front matter (the lines between the two --- lines). Fix it; the file is taken as soon as it is valid.", name, files)
		default:
			text = fmt.Sprintf("Shared repository %s: %s (%s).", name, files, strings.ReplaceAll(k, "_", " "))
		}
		out = append(out, Reminder{Kind: k, Text: text})
	}
	return out
}

// KindProposal: the agent's changes to a shared repository it may only
// propose to wait on an operator.
const KindProposal = "proposal"

// PendingProposal is one of the agent's proposals not merged yet.
type PendingProposal struct {
	Branch string   `json:"branch"`
	Paths  []string `json:"paths"`
}

// Proposals is the reminder of the agent's pending proposals to shared
// repository name (none when there are none).
func Proposals(name string, pending []PendingProposal) []Reminder {
	if len(pending) == 0 {
		return nil
	}
	items := listEach(len(pending), 5, func(i int) string {
		return fmt.Sprintf("%s (%s)", pending[i].Branch, strings.Join(pending[i].Paths, ", "))
	})
	return []Reminder{{Kind: KindProposal, Text: fmt.Sprintf(
		"Your changes to shared repository %s are proposals, not the shared memory: %s. An operator reviews and merges them; until then other agents do not see them. Do not write them again.",
		name, items)}}
}
