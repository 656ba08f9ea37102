package provider

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// The kubelet's stats API, /stats/summary and /metrics/resource, which
// metrics-server scrapes for kubectl top: each Pod's containers' CPU time
// and memory from "pod stats" of its unitrun pod (systemd's accounting of
// each app's unit, or its processes' from /proc), and the node's from
// /proc/stat and /proc/meminfo.

// podSample is what a Pod's containers use, and when each started.
type podSample struct {
	pod     *corev1.Pod
	usage   podUsage
	started map[string]time.Time // by container, those running
}

// nodeSample is what the whole host uses: its CPU time in nanoseconds and
// its memory working set (MemTotal less MemAvailable), in bytes.
type nodeSample struct {
	at          time.Time
	cpu, memory uint64
}

// samples reads the usage of the node and of each Pod whose unitrun pod
// runs. A pod that ends while it is read is left out.
func (p *Provider) samples(ctx context.Context) (nodeSample, []podSample, error) {
	n, err := readNode()
	if err != nil {
		return nodeSample{}, nil, err
	}
	type running struct {
		pod  *corev1.Pod
		name string
		sent *corev1.PodStatus
	}
	var list []running
	p.mu.Lock()
	for _, e := range p.pods {
		if e.refused == nil && e.waiting == nil && e.final == nil && e.sent != nil && e.sent.Phase == corev1.PodRunning {
			list = append(list, running{e.pod, e.name, e.sent})
		}
	}
	p.mu.Unlock()
	var pods []podSample
	for _, r := range list {
		u, err := p.eng.podUsage(ctx, r.name)
		if err != nil {
			continue
		}
		s := podSample{pod: r.pod, usage: u, started: map[string]time.Time{}}
		for _, cs := range r.sent.ContainerStatuses {
			if cs.State.Running != nil {
				s.started[cs.Name] = cs.State.Running.StartedAt.Time
			}
		}
		pods = append(pods, s)
	}
	return n, pods, nil
}

// readNode reads the host's CPU time, from the first line of /proc/stat
// (every state but idle and iowait), and its memory working set.
func readNode() (nodeSample, error) {
	n := nodeSample{at: time.Now()}
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return n, err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return n, fmt.Errorf("/proc/stat: cannot read %q", line)
	}
	var ticks uint64
	for i, v := range f[1:] {
		t, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return n, fmt.Errorf("/proc/stat: cannot read %q", line)
		}
		// user nice system idle iowait irq softirq steal guest
		// guest_nice: guest time is counted in user and nice already.
		if i != 3 && i != 4 && i < 8 {
			ticks += t
		}
	}
	// USER_HZ, 100 on every Linux architecture.
	n.cpu = ticks * uint64(10*time.Millisecond)
	total, err := meminfo("MemTotal")
	if err != nil {
		return n, err
	}
	avail, err := meminfo("MemAvailable")
	if err != nil {
		return n, err
	}
	n.memory = uint64(max(total-avail, 0))
	return n, nil
}

// GetStatsSummary returns the kubelet's stats summary: the node's CPU
// time and memory, and each running Pod's and its containers'. An
// isolated pod's containers are accounted together: the Pod has its own
// figures and no container's.
func (p *Provider) GetStatsSummary(ctx context.Context) (*statsv1alpha1.Summary, error) {
	n, pods, err := p.samples(ctx)
	if err != nil {
		return nil, err
	}
	at := metav1.NewTime(n.at)
	s := &statsv1alpha1.Summary{Node: statsv1alpha1.NodeStats{
		NodeName: p.cfg.NodeName,
		CPU:      &statsv1alpha1.CPUStats{Time: at, UsageCoreNanoSeconds: &n.cpu},
		Memory:   &statsv1alpha1.MemoryStats{Time: at, WorkingSetBytes: &n.memory},
	}}
	for _, ps := range pods {
		at := metav1.NewTime(ps.usage.at)
		st := statsv1alpha1.PodStats{
			PodRef:     statsv1alpha1.PodReference{Name: ps.pod.Name, Namespace: ps.pod.Namespace, UID: string(ps.pod.UID)},
			StartTime:  ps.pod.CreationTimestamp,
			Containers: []statsv1alpha1.ContainerStats{},
		}
		if ps.pod.Status.StartTime != nil {
			st.StartTime = *ps.pod.Status.StartTime
		}
		var total appUsage
		for _, a := range ps.usage.apps {
			total.cpu, total.memory = sum(total.cpu, a.cpu), sum(total.memory, a.memory)
			started, ok := ps.started[a.app]
			if a.app == "" || !ok || a.cpu == nil {
				continue
			}
			st.Containers = append(st.Containers, statsv1alpha1.ContainerStats{
				Name:      a.app,
				StartTime: metav1.NewTime(started),
				CPU:       &statsv1alpha1.CPUStats{Time: at, UsageCoreNanoSeconds: a.cpu},
				Memory:    &statsv1alpha1.MemoryStats{Time: at, WorkingSetBytes: a.memory, UsageBytes: a.memory},
			})
		}
		if total.cpu != nil {
			st.CPU = &statsv1alpha1.CPUStats{Time: at, UsageCoreNanoSeconds: total.cpu}
		}
		if total.memory != nil {
			st.Memory = &statsv1alpha1.MemoryStats{Time: at, WorkingSetBytes: total.memory, UsageBytes: total.memory}
		}
		s.Pods = append(s.Pods, st)
	}
	return s, nil
}

// sum is a plus b, nil if both are.
func sum(a, b *uint64) *uint64 {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	v := *a + *b
	return &v
}

// GetMetricsResource returns the kubelet's resource metrics, as
// metrics-server reads them: node_cpu_usage_seconds_total and
// node_memory_working_set_bytes; for each running container,
// container_cpu_usage_seconds_total, container_memory_working_set_bytes
// and container_start_time_seconds; pod_cpu_usage_seconds_total and
// pod_memory_working_set_bytes for each Pod.
func (p *Provider) GetMetricsResource(ctx context.Context) ([]*dto.MetricFamily, error) {
	summary, err := p.GetStatsSummary(ctx)
	if err != nil {
		return nil, err
	}
	families := map[string]*dto.MetricFamily{}
	var order []string
	add := func(name, help string, typ dto.MetricType, at metav1.Time, value float64, labels ...string) {
		f := families[name]
		if f == nil {
			f = &dto.MetricFamily{Name: &name, Help: &help, Type: typ.Enum()}
			families[name] = f
			order = append(order, name)
		}
		m := &dto.Metric{TimestampMs: ptr(at.UnixMilli())}
		for i := 0; i+1 < len(labels); i += 2 {
			m.Label = append(m.Label, &dto.LabelPair{Name: &labels[i], Value: &labels[i+1]})
		}
		if typ == dto.MetricType_COUNTER {
			m.Counter = &dto.Counter{Value: &value}
		} else {
			m.Gauge = &dto.Gauge{Value: &value}
		}
		f.Metric = append(f.Metric, m)
	}
	seconds := func(ns uint64) float64 { return float64(ns) / 1e9 }
	const cpuHelp, memHelp = "Cumulative cpu time consumed in core-seconds", "Current working set in bytes"
	node := summary.Node
	add("node_cpu_usage_seconds_total", "Cumulative cpu time consumed by the node in core-seconds", dto.MetricType_COUNTER, node.CPU.Time, seconds(*node.CPU.UsageCoreNanoSeconds))
	add("node_memory_working_set_bytes", "Current working set of the node in bytes", dto.MetricType_GAUGE, node.Memory.Time, float64(*node.Memory.WorkingSetBytes))
	for _, ps := range summary.Pods {
		for _, c := range ps.Containers {
			labels := []string{"container", c.Name, "namespace", ps.PodRef.Namespace, "pod", ps.PodRef.Name}
			add("container_cpu_usage_seconds_total", cpuHelp, dto.MetricType_COUNTER, c.CPU.Time, seconds(*c.CPU.UsageCoreNanoSeconds), labels...)
			if c.Memory.WorkingSetBytes != nil {
				add("container_memory_working_set_bytes", memHelp, dto.MetricType_GAUGE, c.Memory.Time, float64(*c.Memory.WorkingSetBytes), labels...)
			}
			add("container_start_time_seconds", "Start time of the container since unix epoch in seconds", dto.MetricType_GAUGE, c.CPU.Time, float64(c.StartTime.UnixNano())/1e9, labels...)
		}
		labels := []string{"namespace", ps.PodRef.Namespace, "pod", ps.PodRef.Name}
		if ps.CPU != nil {
			add("pod_cpu_usage_seconds_total", cpuHelp, dto.MetricType_COUNTER, ps.CPU.Time, seconds(*ps.CPU.UsageCoreNanoSeconds), labels...)
		}
		if ps.Memory != nil {
			add("pod_memory_working_set_bytes", memHelp, dto.MetricType_GAUGE, ps.Memory.Time, float64(*ps.Memory.WorkingSetBytes), labels...)
		}
	}
	list := make([]*dto.MetricFamily, len(order))
	for i, name := range order {
		list[i] = families[name]
	}
	return list, nil
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }
