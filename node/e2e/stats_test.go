package e2e

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// stats applies a Pod with a container that burns CPU and one that holds
// 64 MiB, and reads the node's kubelet stats API on the node's port with
// the API server's kubelet client certificate, as metrics-server scrapes
// it for kubectl top (the API server's node proxy refuses the node's
// loopback address): /stats/summary gives the
// burning container CPU time and the other at least 64 MiB of working
// set (the first less), and the node its CPU time and memory;
// /metrics/resource has both containers' series and the node's.
func (c *cluster) stats(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: the container that holds memory is a python3 program")
	}
	c.apply(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: load}
spec:
  nodeName: %s
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  tolerations:
  - {key: virtual-kubelet.io/provider, operator: Exists, effect: NoSchedule}
  containers:
  - {name: burn, image: debian, command: ["/bin/sh", "-c", "while :; do :; done"]}
  - {name: hold, image: debian, command: [%q, "-c", "import time; b = bytearray(b'x') * (64 << 20); time.sleep(600)"]}
`, nodeName, python))
	defer c.mustKubectl("delete", "pod", "load", "--timeout=60s")
	c.mustKubectl("wait", "--for=condition=Ready", "pod/load", "--timeout=90s")
	type usage struct {
		CPU *struct {
			UsageCoreNanoSeconds *uint64 `json:"usageCoreNanoSeconds"`
		} `json:"cpu"`
		Memory *struct {
			WorkingSetBytes *uint64 `json:"workingSetBytes"`
		} `json:"memory"`
	}
	var summary struct {
		Node struct {
			NodeName string `json:"nodeName"`
			usage
		} `json:"node"`
		Pods []struct {
			PodRef struct {
				Name, Namespace string
			} `json:"podRef"`
			Containers []struct {
				Name string `json:"name"`
				usage
			} `json:"containers"`
			usage
		} `json:"pods"`
	}
	value := func(p *uint64) uint64 {
		if p == nil {
			return 0
		}
		return *p
	}
	cpu := func(u usage) uint64 {
		if u.CPU == nil {
			return 0
		}
		return value(u.CPU.UsageCoreNanoSeconds)
	}
	mem := func(u usage) uint64 {
		if u.Memory == nil {
			return 0
		}
		return value(u.Memory.WorkingSetBytes)
	}
	port := c.mustKubectl("get", "node", nodeName, "-o", "jsonpath={.status.daemonEndpoints.kubeletEndpoint.Port}")
	cert, err := tls.LoadX509KeyPair(c.path("apiserver-kubelet-client.crt"), c.path("apiserver-kubelet-client.key"))
	if err != nil {
		t.Fatal(err)
	}
	// The node serves a self-signed certificate (its warning says so).
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true}}}
	get := func(path string) (string, error) {
		resp, err := client.Get("https://127.0.0.1:" + port + path)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("GET %s: %s: %s", path, resp.Status, body)
		}
		return string(body), err
	}
	var found map[string]usage
	// The container holds its 64 MiB once python3 has allocated them.
	c.eventually(60*time.Second, "the summary's containers of pod load", func() error {
		out, err := get("/stats/summary")
		if err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(out), &summary); err != nil {
			return err
		}
		found = map[string]usage{}
		for _, p := range summary.Pods {
			if p.PodRef.Name == "load" && p.PodRef.Namespace == "default" {
				for _, ct := range p.Containers {
					found[ct.Name] = ct.usage
				}
			}
		}
		if mem(found["hold"]) < 64<<20 || cpu(found["burn"]) == 0 {
			return fmt.Errorf("containers %s", out)
		}
		return nil
	})
	if mem(found["burn"]) >= 64<<20 {
		t.Errorf("stats/summary: container burn has %d bytes of working set, want less than hold's 64 MiB", mem(found["burn"]))
	}
	if summary.Node.NodeName != nodeName || cpu(summary.Node.usage) == 0 || mem(summary.Node.usage) == 0 {
		t.Errorf("stats/summary: node %q with CPU %d ns and %d bytes, want %s with both above 0", summary.Node.NodeName, cpu(summary.Node.usage), mem(summary.Node.usage), nodeName)
	}

	out, err := get("/metrics/resource")
	if err != nil {
		t.Fatal(err)
	}
	for _, series := range []string{
		"node_cpu_usage_seconds_total ",
		"node_memory_working_set_bytes ",
		`container_cpu_usage_seconds_total{container="burn",namespace="default",pod="load"} `,
		`container_memory_working_set_bytes{container="hold",namespace="default",pod="load"} `,
		`container_start_time_seconds{container="hold",namespace="default",pod="load"} `,
		`pod_cpu_usage_seconds_total{namespace="default",pod="load"} `,
	} {
		if !strings.Contains(out, "\n"+series) {
			t.Errorf("metrics/resource has no series %s:\n%s", series, out)
		}
	}
}
