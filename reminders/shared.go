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
// is KindSharedWriteDenied, KindReadOnlyRejected, KindSecretHeld,
// KindFrontMatterHeld, KindWriteHeld or KindConstraintsHeld (with the
// problems the write adds, in letta-code's words).
type SharedNote struct {
	Kind     string   `json:"kind"`
	Path     string   `json:"path"`
	Problems []string `json:"problems,omitempty"`
}

// ViewFolder is the agent's view folder of shared repository name as the
// agent sees it: relative to its own folder (beside its memory), never a
// host path.
func ViewFolder(name string) string { return "shared/" + name }

// Shared turns the notes of the agent's view of shared repository name
// into reminders, one per kind. Files are named as the agent reaches
// them: /memories/<path> with the memory tool's shared parameter, and in
// its view folder (ViewFolder).
func Shared(name string, notes []SharedNote) []Reminder {
	folder := ViewFolder(name)
	byKind := map[string][]string{}
	why := map[string][]string{} // constraints_held: path → problems (the last note's)
	var kinds []string
	for _, n := range notes {
		if n.Kind == KindConstraintsHeld {
			why[n.Path] = n.Problems
		}
		if !slices.Contains(byKind[n.Kind], n.Path) {
			byKind[n.Kind] = append(byKind[n.Kind], n.Path)
		}
		if !slices.Contains(kinds, n.Kind) {
			kinds = append(kinds, n.Kind)
		}
	}
	var out []Reminder
	for _, k := range kinds {
		files := listEach(len(byKind[k]), 5, func(i int) string { return memPath(byKind[k][i]) }) + " (shared repository " + name + ", in your view folder " + folder + ")"
		var text string
		switch k {
		case KindSharedWriteDenied:
			text = fmt.Sprintf("Your change to %s was undone: shared repository %s is read-only for you (write: deny). The file shows the shared version again; the operator keeps your text. Put your own notes in your own memory.", files, name)
		case KindReadOnlyRejected:
			text = fmt.Sprintf("Your change to the read-only block(s) %s of shared repository %s was undone: those blocks are written by the operator, who keeps your text. Put your notes in another file.", files, name)
		case KindSecretHeld:
			text = fmt.Sprintf("Not saved to shared repository %s: %s look(s) like it holds a credential. Remove the secret from the file (keep the rest) or delete the file; it is taken as soon as it is clean.", name, files)
		case KindWriteHeld:
			text = fmt.Sprintf("Not saved to shared repository %s: %s is too large (over the daemon's --max-file-bytes) or its name has a control character (e.g. a newline) or bytes that are not UTF-8. Split it, or rename it to a plain name; it is taken as soon as it fits.", name, files)
		case KindFrontMatterHeld:
			text = fmt.Sprintf("Not saved to shared repository %s: your write to %s broke the file's front matter (the lines between the two --- lines). Fix it; the file is taken as soon as it is valid.", name, files)
		case KindConstraintsHeld:
			files = listEach(len(byKind[k]), 5, func(i int) string {
				p := byKind[k][i]
				if len(why[p]) == 0 {
					return folder + "/" + p
				}
				return folder + "/" + p + " (" + strings.Join(why[p], "; ") + ")"
			})
			text = fmt.Sprintf("Not saved to shared repository %s: %s would break the memory's limits (letta-code's MemFS rules: folders at most 2 deep, a file at most 20,000 characters, root memory at most 65,536 in all, a MEMORY.md in every folder, unless .memfs.config.json says otherwise); letta-code agents share this repository and could not commit past it. Split the file, move detail behind a MEMORY.md index, or undo the change; it is taken as soon as it fits.", name, files)
		case KindSharedHeadDetached:
			text = fmt.Sprintf("Shared repository %s's clone on the host was found off its branch (someone's git checkout of a commit there) and was moved aside for the operator, nothing deleted; memfsd cloned the repository again from its remote, and your view folder %s now shows the shared branch's tip. A change of yours that had not reached the remote yet may be missing there: look over your recent changes and write again what is missing.", name, folder)
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

// KindSharedHeadDetached: the shared clone was found off its branch (a
// detached HEAD) and moved aside; the repository was cloned again.
const KindSharedHeadDetached = "shared_head_detached"

// KindSharedDetached: a shared repository was detached from the agent;
// its view folder was moved aside (nothing lost).
const KindSharedDetached = "shared_detached"

// SharedDetached tells the agent that shared repository name is no longer
// attached and where its view folder's files went (movedTo, as the agent
// sees it: shared/<name>@detached-<stamp>).
func SharedDetached(name, movedTo string) Reminder {
	return Reminder{Kind: KindSharedDetached, Text: fmt.Sprintf("Shared repository %s is no longer attached to you (the operator detached it): your view folder %s is gone, and its files are kept in %s, which memfsd does not read: nothing written there reaches any repository. Put what you want to keep in your own memory.", name, ViewFolder(name), movedTo)}
}
