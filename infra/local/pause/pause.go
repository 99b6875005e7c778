// The pod sandbox's pause process for the local node (no registry serves registry.k8s.io/pause here):
// it holds the pod's namespaces, reaps the zombies it inherits as PID 1, and exits on SIGTERM or SIGINT.
// Built statically (CGO_ENABLED=0) by scripts/build-binaries.sh and packed as an image by the real node.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		// Reap every exited child; one SIGCHLD may stand for several.
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
