package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxMessage bounds one message read on stdio (the API's body bound, with
// room for the JSON-RPC envelope).
const MaxMessage = 8<<20 + 64<<10

// StdioTransport is newline-delimited JSON-RPC on in and out that survives
// bad input: a line that is not a JSON-RPC message (garbage, a truncated
// object, one over MaxMessage) is answered with a JSON-RPC error (-32700
// parse error, -32600 invalid request; the request's id when it can be
// read) and dropped, and the session goes on. The SDK's own stdio
// transport ends the session at the first such line.
//
// Its reader goroutine ends when in does (EOF or an error).
func StdioTransport(in io.Reader, out io.Writer) mcp.Transport {
	pr, pw := io.Pipe()
	w := &lineWriter{w: out}
	go filterLines(in, pw, w)
	return &mcp.IOTransport{Reader: pr, Writer: w, MaxLineLength: -1}
}

// lineWriter writes whole lines, one writer at a time (the SDK's
// messages and the filter's errors).
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lineWriter) Close() error { return nil }

// filterLines copies the good lines of in to pw and answers the bad ones
// on w.
func filterLines(in io.Reader, pw *io.PipeWriter, w *lineWriter) {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, tooLong, err := readLine(r)
		if len(line) > 0 || tooLong {
			if bad := check(line, tooLong); bad != nil {
				data, _ := json.Marshal(bad)
				w.Write(append(data, '\n'))
			} else if _, werr := pw.Write(append(line, '\n')); werr != nil {
				return // the session is over
			}
		}
		if err != nil {
			pw.CloseWithError(err)
			return
		}
	}
}

// readLine reads one line (without its end) of at most MaxMessage bytes;
// the rest of a longer line is read and dropped.
func readLine(r *bufio.Reader) ([]byte, bool, error) {
	var buf []byte
	tooLong := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > MaxMessage {
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSpace(buf), tooLong, err
	}
}

type rpcError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// check is the error answer of a line that is not a message, nil for a
// message (or a batch, which the SDK judges).
func check(line []byte, tooLong bool) *rpcError {
	bad := &rpcError{JSONRPC: "2.0", ID: json.RawMessage("null")}
	switch {
	case tooLong:
		bad.Error.Code, bad.Error.Message = -32600, fmt.Sprintf("invalid request: a message over %d bytes; nothing was done", MaxMessage)
		return bad
	case line[0] == '[':
		return nil
	}
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		var probe struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(line, &probe) != nil {
			bad.Error.Code, bad.Error.Message = -32700, "parse error: not a JSON-RPC message: "+err.Error()+"; nothing was done"
			return bad
		}
		if len(probe.ID) > 0 {
			bad.ID = probe.ID
		}
		bad.Error.Code, bad.Error.Message = -32600, "invalid request: "+err.Error()+"; nothing was done"
		return bad
	}
	return nil
}
