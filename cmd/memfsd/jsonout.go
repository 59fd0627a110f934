package main

import (
	"bytes"
	"encoding/json"
	"io"
)

// printJSON writes v as indented JSON with <, > and & as they are: the
// CLI's output is read by people and scripts, not embedded in HTML, and
// encoding/json's default \u003c made a file's text unreadable (issue 28).
func printJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	// A json.RawMessage inside v keeps the escapes it was made with.
	_, err := w.Write(unescapeHTML(buf.Bytes()))
	return err
}

// printRawJSON writes a JSON answer as received (the daemon's, whose HTTP
// encoder escapes <, > and &) on one line, with those escapes undone.
func printRawJSON(w io.Writer, raw []byte) error {
	out := unescapeHTML(bytes.TrimRight(raw, "\n"))
	_, err := w.Write(append(out, '\n'))
	return err
}

// unescapeHTML turns the \u003c, \u003e and \u0026 escapes inside JSON
// strings back into <, > and &. It reads escapes left to right, so an
// escaped backslash followed by the text "u003c" stays as it is.
func unescapeHTML(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u00`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) {
			switch string(bytes.ToLower(b[i+2 : i+6])) {
			case "003c":
				out, i = append(out, '<'), i+5
				continue
			case "003e":
				out, i = append(out, '>'), i+5
				continue
			case "0026":
				out, i = append(out, '&'), i+5
				continue
			}
		}
		// Any other escape is copied whole (two bytes), so its second
		// byte is never read as the start of an escape.
		out = append(out, b[i], b[i+1])
		i++
	}
	return out
}
