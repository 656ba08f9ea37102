package provider

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/inject"
)

// The node reports the host's OS image as the kubelet does, the
// os-release PRETTY_NAME (kubectl get nodes -o wide: OS-IMAGE), and its
// kernel.
func TestNodeSystemInfo(t *testing.T) {
	n, err := (&Config{NodeName: "n1"}).Node()
	if err != nil {
		t.Fatal(err)
	}
	want := "Linux"
	if f, err := inject.ReadOSRelease(""); err == nil && f["PRETTY_NAME"] != "" {
		want = f["PRETTY_NAME"]
	}
	if info := n.Status.NodeInfo; info.OSImage != want || info.KernelVersion == "" || info.OperatingSystem != "linux" {
		t.Errorf("node info %+v; want OS image %q, a kernel version, linux", info, want)
	}
	if info := n.Status.NodeInfo; !strings.HasSuffix(info.KubeletVersion, "+unitrun") ||
		!strings.HasPrefix(info.ContainerRuntimeVersion, "unitrun://") || len(info.ContainerRuntimeVersion) == len("unitrun://") {
		t.Errorf("kubelet version %q, container runtime %q; want VERSION+unitrun and unitrun://VERSION", info.KubeletVersion, info.ContainerRuntimeVersion)
	}
	bi := &debug.BuildInfo{Deps: []*debug.Module{{Path: "k8s.io/apimachinery", Version: "v0.37.2"}, {Path: "k8s.io/api", Version: "v0.37.1"}}}
	if v := kubeletVersion(bi); v != "v1.37.1+unitrun" {
		t.Errorf("kubelet version of a build against k8s.io/api v0.37.1: %q, want v1.37.1+unitrun", v)
	}
}
