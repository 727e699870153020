// Command pause is the sandbox container of the real node's pods: it holds the pod's namespaces open,
// reaps the zombies it inherits as the pod's PID 1, and exits at once on SIGINT or SIGTERM. Static
// (CGO_ENABLED=0), so its image is this one file: no registry needed for the kubelet's sandbox image.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
