//go:build tools

// Package tools pins CoreDNS: the real node's in-cluster DNS (kube-dns Service).
package tools

import (
	_ "github.com/coredns/coredns"
)
