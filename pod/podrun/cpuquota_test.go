package podrun

import (
	"context"
	"testing"

	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/pod"
)

// An app's cpuMillis reaches systemd as CPUQuota=: 100 thousandths of a
// CPU are 100 ms of CPU time a second. (This host's control groups may
// not enforce it: systemd does where the cpu controller is there.)
func TestPodCPUMillis(t *testing.T) {
	r := newRunner(t)
	name := run(t, r, `
name: cpu
apps:
  - name: capped
    resources: {cpuMillis: 100}
    exec: ["/bin/sleep", "600"]
`, "")
	props, err := r.Mgr.Properties(context.Background(), pod.AppUnit(name, "capped"), manager.ServiceIface)
	if err != nil {
		t.Fatal(err)
	}
	if got := props["CPUQuotaPerSecUSec"].Value(); got != uint64(100000) {
		t.Errorf("CPUQuotaPerSecUSec %v, want 100000", got)
	}
}
