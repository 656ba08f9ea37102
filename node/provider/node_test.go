package provider

import (
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
}
