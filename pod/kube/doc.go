// Package kube maps a Kubernetes Pod (core/v1) to a unitrun pod
// manifest: the one mapping that unitrun pod run applies to a Pod's YAML
// and unitrun-node to the Pods a cluster binds to it (docs/kubernetes.md,
// Mapping; docs/pods.md, Kubernetes Pods).
//
// It has Pod types of its own, with Kubernetes' JSON names, and imports
// none of Kubernetes' libraries, so that the unitrun binary does not link
// them: [Decode] reads Pods strictly, refusing a field a Pod does not
// have by its path; [Translate] maps one, refusing what a unitrun pod
// cannot give, with the data of the Pod's cluster as [Options] when there
// is one; [Plan] maps a file of Pods for running without a cluster.
package kube
