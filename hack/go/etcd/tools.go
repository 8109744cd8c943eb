//go:build tools

// Package tools pins the etcd server built by .ci/install-k8s.
package tools

import _ "go.etcd.io/etcd/server/v3"
