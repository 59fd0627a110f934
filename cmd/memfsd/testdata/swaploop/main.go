// Command swaploop is the agent's shell in TestTool_SymlinkSwapThroughTheDaemon:
// a separate process that swaps two names (a folder and a link) with
// renameat2(RENAME_EXCHANGE), again and again, until killed; it prints the
// number of swaps on SIGTERM.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: swaploop A B")
		os.Exit(2)
	}
	a, b := os.Args[1], os.Args[2]
	var swaps atomic.Int64
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		fmt.Println(swaps.Load())
		os.Exit(0)
	}()
	for {
		if unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE) == nil {
			swaps.Add(1)
		}
	}
}
