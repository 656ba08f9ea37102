package podrun

import (
	"context"
	"math"
	"os/user"
	"strconv"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/pod"
)

// Where a sample of an app's usage comes from ([AppStats].Source).
const (
	// FromSystemd: the app's unit's accounting (CPUUsageNSec,
	// MemoryCurrent, TasksCurrent, IOReadBytes, IOWriteBytes), which
	// the app units turn on (pod.Graph).
	FromSystemd = "systemd"
	// FromProcesses: the manager accounts nothing for the unit (a user
	// manager on a host with cgroup v1, such as the embedded one there,
	// is given no controller), so the usage is summed from /proc over
	// the processes in the unit's cgroup, as systemd lists them.
	FromProcesses = "processes"
)

// Usage is what the processes of an app, or of a pod, have used; a nil
// field is one that is not known (the app does not run, or its source
// does not account it).
type Usage struct {
	// CPUNSec is the CPU time used, in nanoseconds: that of the unit's
	// run so far from systemd, or that of the processes alive and of
	// the children they have waited for from /proc.
	CPUNSec *uint64 `json:"cpu_nsec"`
	// CPUPercent is the CPU time used over the interval between two
	// samples, in percent of one CPU (200 is two CPUs busy); set by
	// [Stats.Since].
	CPUPercent *float64 `json:"cpu_percent"`
	// MemoryBytes is systemd's MemoryCurrent (the cgroup's memory,
	// page cache included), or the processes' resident memory.
	MemoryBytes *uint64 `json:"memory_bytes"`
	// Tasks is the number of tasks (threads).
	Tasks *uint64 `json:"tasks"`
	// IOReadBytes and IOWriteBytes are the bytes read from and written
	// to block devices.
	IOReadBytes  *uint64 `json:"io_read_bytes"`
	IOWriteBytes *uint64 `json:"io_write_bytes"`
}

// AppStats is one sample of the usage of an app of a pod.
type AppStats struct {
	// Name is the app's name; "" for an isolated pod, whose apps are
	// accounted together, as the pod's container service.
	Name string `json:"name"`
	// Unit is the unit accounted.
	Unit string `json:"unit"`
	// Source is where the usage was read: FromSystemd, FromProcesses,
	// or "" when the unit has no process and systemd accounts nothing.
	Source string `json:"source"`
	Usage
}

// Stats is one sample of the usage of a pod's apps, taken at At; Total
// sums the apps' (nil where no app's is known).
type Stats struct {
	Pod   string     `json:"pod"`
	At    time.Time  `json:"at"`
	Apps  []AppStats `json:"apps"`
	Total Usage      `json:"total"`
}

// accountingProps are the accounting properties of a unit that Stats reads.
var accountingProps = []string{"CPUUsageNSec", "MemoryCurrent", "TasksCurrent", "IOReadBytes", "IOWriteBytes"}

// Stats returns a sample of the usage of pod name's apps, from the
// accounting of their units, or from /proc where the manager has none.
func (r *Runner) Stats(ctx context.Context, name string) (Stats, error) {
	units, err := r.accountedUnits(name)
	if err != nil {
		return Stats{}, err
	}
	// Every unit's properties, read in one round trip.
	reads := make([]*manager.Reading, len(units))
	for i, u := range units {
		reads[i] = r.Mgr.Read(ctx, u.Unit, manager.ServiceIface, accountingProps...)
	}
	s := Stats{Pod: name, At: time.Now()}
	for i, u := range units {
		props, _, err := reads[i].Wait()
		if err != nil && !manager.IsNoSuchUnit(err) {
			return Stats{}, err
		}
		u.Usage, u.Source = fromSystemd(props)
		if u.Source == "" {
			if u.Usage, u.Source, err = r.fromProcesses(ctx, u.Unit); err != nil {
				return Stats{}, err
			}
		}
		s.Apps = append(s.Apps, u)
	}
	for _, a := range s.Apps {
		s.Total.add(a.Usage)
	}
	return s, nil
}

// accountedUnits returns the apps of pod name and their units, without
// their usage: for an isolated pod, whose apps run under its own systemd,
// its container service alone.
func (r *Runner) accountedUnits(name string) ([]AppStats, error) {
	if err := r.exists(name); err != nil {
		return nil, err
	}
	m, err := pod.LoadSpec(r.StateDir, name)
	if err != nil {
		return nil, err
	}
	if isolated(m) {
		return []AppStats{{Unit: pod.ContainerUnit(name)}}, nil
	}
	var units []AppStats
	for _, a := range m.Apps {
		units = append(units, AppStats{Name: a.Name, Unit: pod.AppUnit(name, a.Name)})
	}
	return units, nil
}

// fromSystemd returns the usage in props, a unit's accounting properties,
// and FromSystemd, or "" if the manager accounts no CPU time for the
// unit: systemd has no cgroup controller to read it from, or the unit
// does not run.
func fromSystemd(props map[string]dbus.Variant) (Usage, string) {
	value := func(name string) *uint64 {
		v, ok := props[name].Value().(uint64)
		if !ok || v == math.MaxUint64 { // systemd's "not set"
			return nil
		}
		return &v
	}
	u := Usage{
		CPUNSec:      value("CPUUsageNSec"),
		MemoryBytes:  value("MemoryCurrent"),
		Tasks:        value("TasksCurrent"),
		IOReadBytes:  value("IOReadBytes"),
		IOWriteBytes: value("IOWriteBytes"),
	}
	if u.CPUNSec == nil {
		return Usage{}, ""
	}
	return u, FromSystemd
}

// fromProcesses returns the usage of the processes in unit u's cgroup
// from /proc, and FromProcesses, or "" if it has none.
func (r *Runner) fromProcesses(ctx context.Context, u string) (Usage, string, error) {
	procs, err := r.Mgr.UnitProcesses(ctx, u)
	if manager.IsNoSuchUnit(err) {
		return Usage{}, "", nil
	}
	if err != nil {
		return Usage{}, "", err
	}
	var sum Usage
	for _, p := range procs {
		if info, err := readProc(int(p.PID)); err == nil {
			sum.add(info.usage())
		}
	}
	if sum.CPUNSec == nil {
		// No process left to read.
		return Usage{}, "", nil
	}
	return sum, FromProcesses, nil
}

// add adds the usage o to u: each field known in o is added to u's,
// which becomes known.
func (u *Usage) add(o Usage) {
	sum := func(to **uint64, v *uint64) {
		if v == nil {
			return
		}
		if *to == nil {
			*to = new(uint64)
		}
		**to += *v
	}
	sum(&u.CPUNSec, o.CPUNSec)
	sum(&u.MemoryBytes, o.MemoryBytes)
	sum(&u.Tasks, o.Tasks)
	sum(&u.IOReadBytes, o.IOReadBytes)
	sum(&u.IOWriteBytes, o.IOWriteBytes)
}

// Since sets the CPUPercent of each app of s, and of its total, from the
// CPU time used since prev, an earlier sample of the same pod: an app
// with a CPU time in both samples from the same source, not smaller in s.
func (s *Stats) Since(prev Stats) {
	wall := s.At.Sub(prev.At)
	if wall <= 0 {
		return
	}
	percent := func(now, before *uint64) *float64 {
		if now == nil || before == nil || *now < *before {
			return nil
		}
		p := float64(*now-*before) / float64(wall.Nanoseconds()) * 100
		return &p
	}
	before := make(map[string]AppStats)
	for _, a := range prev.Apps {
		before[a.Unit] = a
	}
	var total Usage
	for i, a := range s.Apps {
		b, ok := before[a.Unit]
		if !ok || b.Source != a.Source {
			continue
		}
		s.Apps[i].CPUPercent = percent(a.CPUNSec, b.CPUNSec)
		if p := s.Apps[i].CPUPercent; p != nil {
			if total.CPUPercent == nil {
				total.CPUPercent = new(float64)
			}
			*total.CPUPercent += *p
		}
	}
	s.Total.CPUPercent = total.CPUPercent
}

// A Process is a process of a pod's app, as Top lists it.
type Process struct {
	// App is the app's name; "" for an isolated pod's processes, which
	// are those of its container service.
	App  string `json:"app"`
	PID  int    `json:"pid"`
	UID  int    `json:"uid"`
	User string `json:"user"`
	// CPU is the CPU time the process has used, user and system.
	CPU     time.Duration `json:"cpu_nsec"`
	Command string        `json:"command"`
}

// Top returns the processes of pod name's apps, app by app in the
// manifest's order: those systemd lists in each app unit's cgroup (with
// the hooks it runs), read from /proc; a process that is gone by then is
// left out.
func (r *Runner) Top(ctx context.Context, name string) ([]Process, error) {
	units, err := r.accountedUnits(name)
	if err != nil {
		return nil, err
	}
	list := []Process{}
	for _, u := range units {
		procs, err := r.Mgr.UnitProcesses(ctx, u.Unit)
		if manager.IsNoSuchUnit(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, p := range procs {
			info, err := readProc(int(p.PID))
			if err != nil {
				continue
			}
			list = append(list, Process{App: u.Name, PID: info.PID, UID: info.UID, User: userName(info.UID), CPU: info.CPU, Command: info.Command})
		}
	}
	return list, nil
}

// userName returns the name of user uid, or its number.
func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return u.Username
	}
	return strconv.Itoa(uid)
}
