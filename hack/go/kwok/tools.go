//go:build tools

// Package tools pins the KWOK command built by .ci/install-k8s.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
