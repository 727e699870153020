//go:build tools

// Package tools records the node commands this module builds: the real node's kubelet and kube-proxy,
// from the same k8s.io/kubernetes release as the control plane (../k8s).
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
