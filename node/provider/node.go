package provider

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/unitrun/unitrun/inject"
	"github.com/unitrun/unitrun/internal/buildinfo"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Taint keeps off the node every Pod that does not tolerate it, as
// virtual-kubelet nodes do: only Pods written for unitrun land here.
var Taint = corev1.Taint{Key: "virtual-kubelet.io/provider", Value: "unitrun", Effect: corev1.TaintEffectNoSchedule}

// MaxPods is the number of Pods the node takes.
const MaxPods = 110

// kubeletVersion is what the node reports as its kubelet version: that
// of the Kubernetes API it is built against, as the binary's build
// information bi has it (k8s.io/api v0.X.Y is Kubernetes v1.X.Y), marked
// as unitrun's: "v1.X.Y+unitrun", or "v0.0.0+unitrun" for a build that
// does not say (bi nil, a test binary).
func kubeletVersion(bi *debug.BuildInfo) string {
	v := "v0.0.0"
	if bi != nil {
		for _, d := range bi.Deps {
			if d.Path == "k8s.io/api" && strings.HasPrefix(d.Version, "v0.") {
				v = "v1." + strings.TrimPrefix(d.Version, "v0.")
			}
		}
	}
	return v + "+unitrun"
}

// runtimeVersion is what the node reports as its container runtime:
// unitrun, of this build's version ("unitrun://(devel)" for a build
// from a checkout), as containerd reports "containerd://1.7.0".
func runtimeVersion() string { return "unitrun://" + buildinfo.Read().Version }

// Node returns the node to register: its capacity and allocatable (CPUs,
// memory and pods) and system info (kernel, OS image) from the host, its
// taint, its labels, its kubelet and container runtime versions, and
// where the kubelet API is (Address and
// KubeletPort). Its conditions are left for the node controller to set.
func (c *Config) Node() (*corev1.Node, error) {
	capacity, err := capacity()
	if err != nil {
		return nil, err
	}
	bi, _ := debug.ReadBuildInfo()
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		return nil, err
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: c.NodeName,
			Labels: map[string]string{
				"type":                   "virtual-kubelet",
				"kubernetes.io/role":     "agent",
				"kubernetes.io/hostname": c.NodeName,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     runtime.GOARCH,
			},
		},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{Taint}},
		Status: corev1.NodeStatus{
			Phase:       corev1.NodePending,
			Capacity:    capacity,
			Allocatable: capacity.DeepCopy(),
			NodeInfo: corev1.NodeSystemInfo{
				OperatingSystem:         "linux",
				Architecture:            runtime.GOARCH,
				KernelVersion:           unix.ByteSliceToString(uts.Release[:]),
				OSImage:                 osImage(),
				KubeletVersion:          kubeletVersion(bi),
				ContainerRuntimeVersion: runtimeVersion(),
			},
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionFalse},
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
				{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse},
				{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse},
				{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse},
			},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: c.KubeletPort}},
		},
	}
	n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: c.NodeName})
	if c.Address != "" {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: c.Address})
	}
	return n, nil
}

// osImage is the host's os-release PRETTY_NAME, as the kubelet reports
// it (kubectl get nodes -o wide: OS-IMAGE), or "Linux" without one.
func osImage() string {
	if f, err := inject.ReadOSRelease(""); err == nil && f["PRETTY_NAME"] != "" {
		return f["PRETTY_NAME"]
	}
	return "Linux"
}

// capacity is the node's capacity, which is its allocatable: the host's
// CPUs and memory, and MaxPods.
func capacity() (corev1.ResourceList, error) {
	mem, err := meminfo("MemTotal")
	if err != nil {
		return nil, err
	}
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(mem, resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(MaxPods, resource.DecimalSI),
	}, nil
}

// meminfo is the field of /proc/meminfo named, in bytes: MemTotal, the
// host's memory, MemAvailable, ...
func meminfo(field string) (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		rest, ok := strings.CutPrefix(s.Text(), field+":")
		if !ok {
			continue
		}
		kb, ok := strings.CutSuffix(strings.TrimSpace(rest), " kB")
		n, err := strconv.ParseInt(kb, 10, 64)
		if !ok || err != nil {
			return 0, fmt.Errorf("/proc/meminfo: cannot read %q", s.Text())
		}
		return n << 10, nil
	}
	if err := s.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("/proc/meminfo has no %s", field)
}
