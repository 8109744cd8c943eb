// Command pause is the real node's pod sandbox process: it holds the pod's namespaces open,
// reaps orphans (it is PID 1 when the pod shares a PID namespace) and exits on SIGTERM/SIGINT.
// A static binary in a FROM-scratch image stands in for registry.k8s.io/pause, which no registry
// here serves.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			return
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
