package kube

import "time"

// MinGracePeriod is the shortest time the kubelet lets a container end
// after SIGTERM before it kills it (its minimumGracePeriodInSeconds),
// whatever the Pod, its probe or a deletion asks.
const MinGracePeriod = 2 * time.Second

// DefaultGracePeriodSeconds is the terminationGracePeriodSeconds the API
// server gives a Pod that sets none.
const DefaultGracePeriodSeconds = 30

// GracePeriod is how long the kubelet lets a container end when a grace
// period of seconds applies (the Pod's terminationGracePeriodSeconds, a
// probe's or a deletion's): at least MinGracePeriod.
func GracePeriod(seconds int64) time.Duration {
	return max(time.Duration(seconds)*time.Second, MinGracePeriod)
}

// podGracePeriod is how long the kubelet lets p's containers end: its
// terminationGracePeriodSeconds, DefaultGracePeriodSeconds where it sets
// none, as the API server defaults it, and at least MinGracePeriod.
func podGracePeriod(p *Pod) time.Duration {
	if g := p.Spec.TerminationGracePeriodSeconds; g != nil {
		return GracePeriod(*g)
	}
	return GracePeriod(DefaultGracePeriodSeconds)
}
