// The pod sandbox's pause process for the local node (no registry serves registry.k8s.io/pause here):
// it holds the pod's namespaces, reaps the zombies it inherits as PID 1, and exits on SIGTERM or SIGINT.
// Built statically (CGO_ENABLED=0) by scripts/build-binaries.sh and packed as an image by the real node.
//
// Given one argument N (whole seconds), it is `sleep N` instead: the sample machine module's images carry
// it as `captf/module/sleep` for the provisioner that keeps an apply busy, since the runner's image has no
// shell and no coreutils. It exits 0 after N seconds, or 128+signal on SIGTERM or SIGINT, as a shell's
// `sleep` killed by that signal reports.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func main() {
	switch len(os.Args) {
	case 1:
		pause()
	case 2:
		seconds, err := strconv.ParseUint(os.Args[1], 10, 32)
		if err != nil {
			fmt.Fprintf(os.Stderr, "sleep: invalid time interval %q\n", os.Args[1])
			os.Exit(1)
		}
		sleep(time.Duration(seconds) * time.Second)
	default:
		fmt.Fprintln(os.Stderr, "usage: pause | sleep <seconds>")
		os.Exit(2)
	}
}

func pause() {
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

func sleep(duration time.Duration) {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-time.After(duration):
		os.Exit(0)
	case s := <-signals:
		os.Exit(128 + int(s.(syscall.Signal)))
	}
}
