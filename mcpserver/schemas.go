package mcpserver

// The tools' JSON schemas, for clients to show. The pipeline checks the
// arguments itself (strict types, the API's texts), so a call that breaks
// a schema still gets the API's answer, as a result with isError.

const memoryDescription = "Anthropic's memory tool (memory_20250818) over /memories, the agent's memory folder kept in git. " +
	"Commands: view (a folder, two levels; or a file with line numbers, view_range to page), create, str_replace, insert, delete, rename. " +
	"Every write is one commit; system/persona.md and system/human.md are read-only. An optional reason becomes the commit message."

const memorySchema = `{
  "type": "object",
  "properties": {
    "command": {"type": "string", "enum": ["view", "create", "str_replace", "insert", "delete", "rename"], "description": "the memory command"},
    "path": {"type": "string", "description": "a path under /memories (view, create, str_replace, insert, delete)"},
    "view_range": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2, "description": "view: first and last line (-1: to the end)"},
    "file_text": {"type": "string", "description": "create: the file's content"},
    "old_str": {"type": "string", "description": "str_replace: text that occurs exactly once"},
    "new_str": {"type": "string", "description": "str_replace: its replacement"},
    "insert_line": {"type": "integer", "minimum": 0, "description": "insert: the line after which insert_text goes (0: at the top)"},
    "insert_text": {"type": "string", "description": "insert: the text"},
    "old_path": {"type": "string", "description": "rename: from"},
    "new_path": {"type": "string", "description": "rename: to"},
    "reason": {"type": "string", "description": "optional: the commit message"}
  },
  "required": ["command"]
}`

const lettaMemoryDescription = "letta-code's memory tool over the agent's memory folder kept in git (file_path relative to it). " +
	"Commands: create, str_replace, insert, delete, rename, update_description; reason is required and becomes the commit message's body."

const lettaMemorySchema = `{
  "type": "object",
  "properties": {
    "command": {"type": "string", "enum": ["create", "str_replace", "insert", "delete", "rename", "update_description"]},
    "reason": {"type": "string", "description": "why: the commit message's body"},
    "file_path": {"type": "string", "description": "a path relative to the memory folder, e.g. system/notes.md"},
    "old_path": {"type": "string"},
    "new_path": {"type": "string"},
    "old_string": {"type": "string"},
    "new_string": {"type": "string"},
    "insert_line": {"type": "integer", "minimum": 0},
    "insert_text": {"type": "string"},
    "description": {"type": "string"},
    "file_text": {"type": "string"}
  },
  "required": ["command", "reason"]
}`

const lettaPatchDescription = "letta-code's memory_apply_patch: a Codex-style patch (*** Begin Patch ... *** End Patch) over the memory folder, one commit."

const lettaPatchSchema = `{
  "type": "object",
  "properties": {
    "reason": {"type": "string", "description": "why: the commit message's body"},
    "input": {"type": "string", "description": "the patch"}
  },
  "required": ["reason", "input"]
}`

const historySchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "a memory path (/memories/... or relative); default: the whole folder"},
    "limit": {"type": "integer", "minimum": 1, "description": "at most this many commits (default 20)"}
  },
  "additionalProperties": false
}`

const showSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "a memory file (/memories/... or relative)"},
    "rev": {"type": "string", "description": "a commit id (4+ digits), HEAD~N or a branch; default HEAD"}
  },
  "required": ["path"],
  "additionalProperties": false
}`

const searchSchema = `{
  "type": "object",
  "properties": {
    "query": {"type": "string", "description": "words to find: names, identifiers, version strings, phrases from a file"},
    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "at most this many files (default 10)"},
    "folder": {"type": "string", "description": "instead of searching, show this folder's overview: each child with its description"}
  },
  "additionalProperties": false
}`

// searchDescription tells the model what memory_search is for.
const searchDescription = "Search the memory by words (names, descriptions and content; identifiers and version strings are words too), " +
	"best files first, each with the folders it was found through and the lines that matched; read a hit with the memory tool's view. " +
	"With folder instead of query: that folder's overview, each child with its description."
