package podrun

import (
	"math"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// systemd's accounting properties become a usage from systemd; its "not
// set" (the maximum uint64) is a value not known, and a unit without CPU
// time (no controller accounts it, as on every manager of the test
// harness's cgroup v1 host) leaves the usage to the processes.
func TestFromSystemd(t *testing.T) {
	props := map[string]dbus.Variant{
		"CPUUsageNSec":  dbus.MakeVariant(uint64(2e9)),
		"MemoryCurrent": dbus.MakeVariant(uint64(64 << 20)),
		"TasksCurrent":  dbus.MakeVariant(uint64(3)),
		"IOReadBytes":   dbus.MakeVariant(uint64(math.MaxUint64)),
		"IOWriteBytes":  dbus.MakeVariant(uint64(4096)),
	}
	u, source := fromSystemd(props)
	if source != FromSystemd || *u.CPUNSec != 2e9 || *u.MemoryBytes != 64<<20 || *u.Tasks != 3 || u.IOReadBytes != nil || *u.IOWriteBytes != 4096 {
		t.Errorf("fromSystemd: %+v, %q", u, source)
	}
	props["CPUUsageNSec"] = dbus.MakeVariant(uint64(math.MaxUint64))
	if u, source := fromSystemd(props); source != "" || u.MemoryBytes != nil {
		t.Errorf("fromSystemd without CPU time: %+v, %q; want nothing", u, source)
	}
}

// CPU % is the CPU time used between two samples over the time between
// them, per app and summed for the pod; an app whose CPU time went down
// (processes gone) or whose source changed has none.
func TestStatsSince(t *testing.T) {
	n := func(v uint64) *uint64 { return &v }
	at := time.Now()
	prev := Stats{At: at, Apps: []AppStats{
		{Unit: "a", Source: FromSystemd, Usage: Usage{CPUNSec: n(1e9)}},
		{Unit: "b", Source: FromProcesses, Usage: Usage{CPUNSec: n(5e9)}},
		{Unit: "c", Source: FromProcesses, Usage: Usage{CPUNSec: n(1e9)}},
	}}
	cur := Stats{At: at.Add(2 * time.Second), Apps: []AppStats{
		{Unit: "a", Source: FromSystemd, Usage: Usage{CPUNSec: n(2e9)}},
		{Unit: "b", Source: FromProcesses, Usage: Usage{CPUNSec: n(1e9)}},
		{Unit: "c", Source: FromSystemd, Usage: Usage{CPUNSec: n(3e9)}},
	}}
	cur.Since(prev)
	if p := cur.Apps[0].CPUPercent; p == nil || *p != 50 {
		t.Errorf("app a: CPU %% %v, want 50", p)
	}
	if cur.Apps[1].CPUPercent != nil || cur.Apps[2].CPUPercent != nil {
		t.Errorf("apps b, c: CPU %% %v, %v, want none", cur.Apps[1].CPUPercent, cur.Apps[2].CPUPercent)
	}
	if p := cur.Total.CPUPercent; p == nil || *p != 50 {
		t.Errorf("total: CPU %% %v, want 50", p)
	}
}
