// Package provider is unitrun-node's virtual-kubelet provider: it runs the
// Pods bound to its node as unitrun pods (a Pod's spec translated into a
// pod manifest), reports their status, serves their containers' logs and
// describes the node to the cluster.
package provider
