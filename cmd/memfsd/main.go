// Command memfsd keeps an AI agent's memory folder in git.
package main

import (
	"errors"
	"fmt"
	"os"
)

func main() {
	err := newRootCmd().Execute()
	var ec exitCode
	switch {
	case err == nil:
	case errors.As(err, &ec):
		os.Exit(int(ec))
	default:
		fmt.Fprintln(os.Stderr, "memfsd:", err)
		os.Exit(1)
	}
}

// exitCode ends the process with a code after the command printed its own
// outcome.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit %d", int(e)) }
