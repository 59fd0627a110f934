// Package blocks knows memfsd's memory blocks: the default persona and
// human blocks, their front matter, and which paths are read-only for the
// agent.
package blocks

// Paths of the read-only blocks, relative to the memory folder.
const (
	PersonaPath = "system/persona.md"
	HumanPath   = "system/human.md"
)

// DefaultPersona is the persona block an empty remote starts with.
const DefaultPersona = `---
description: Who the agent is, how it speaks and what it cares about. Written by its operator; read-only for the agent.
read_only: true
limit: 5000
---
I am a helpful assistant with a long-term memory kept in files. I keep my
notes short, dated and accurate, and I correct them when I learn better.
`

// DefaultHuman is the human block an empty remote starts with.
const DefaultHuman = `---
description: What the agent knows about the person it works with. Written by its operator; read-only for the agent.
read_only: true
limit: 5000
---
Nothing is known about the human yet.
`

// Defaults maps each default block's path to its content.
func Defaults() map[string]string {
	return map[string]string{PersonaPath: DefaultPersona, HumanPath: DefaultHuman}
}
