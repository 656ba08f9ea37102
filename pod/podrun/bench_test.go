package podrun

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/unitrun/unitrun/image"
	"github.com/unitrun/unitrun/image/imagetest"
	"github.com/unitrun/unitrun/image/registry"
	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/record"
	"github.com/unitrun/unitrun/unit"
)

// BenchmarkPods measures, for pods of 1, 10 and 100 apps (or the sizes,
// separated by commas, that UNITRUN_BENCH_APPS names), the time from
// "unitrun pod run --detach" to every app running (the command returns
// once the pod's target is started, which is After= every Type=exec app)
// and to every exit recorded (every app's status file is written), against
// a floor measured in the same run: as many transient units started at
// once with job.Command, until every Start returned, and until every Run
// returned with its exit status. It prints one table; run it with
// bench/pods.sh. For the rec measures it also prints the CPU time the
// manager used meanwhile, its own and that of the processes it forked and
// reaped (apps, hooks), to tell systemd's share from unitrun's.
//
// For rec it also times floors with the graph's processes: floor3-rec,
// the same transient units, each with ExecStop=/bin/true and
// ExecStopPost=/bin/true, so that every exit costs the manager three
// processes, as an app's exit does in the graph (the app, its
// ExecStopPost= hook, its reaper's ExecStop=), with nothing of unitrun's
// in them; and floor2-rec, with ExecStop=/bin/true alone: two processes
// per exit, the fewest a graph whose reapers work in ExecStop= can have.
// floor3/floor is what the graph's shape costs; pod/floor3 is what
// unitrun's hooks add to it.
//
// From the CPU time of the manager's children in floor3-rec (three
// /bin/true per exit) and in pod-rec it prints what unitrun's processes
// cost per run of an app against one /bin/true: per run, the manager
// starts the start hook (which starts the log copier, then executes the
// app's /bin/true) and, at the exit, the exit hook, each run by the small
// hook binary beside unitrun (cmd/unitrun-hook), else by unitrun (the reaper of an
// app that never restarts is a target, which runs nothing); less the
// app's /bin/true, that is the sum of those three. With the hook binary it
// also prints what one exit of the hook costs as systemd spawns it, alone
// and against one /bin/true (hookFloor).
// After each round it prints the slope of pod-rec and floor3-rec between
// consecutive sizes, in milliseconds per app: alike slopes are a cost
// linear in the number of apps.
func BenchmarkPods(b *testing.B) {
	sizes := []int{1, 10, 100}
	if s := os.Getenv("UNITRUN_BENCH_APPS"); s != "" {
		sizes = sizes[:0]
		for f := range strings.SplitSeq(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				b.Fatalf("UNITRUN_BENCH_APPS=%q: want pod sizes (numbers of apps, at least 1) separated by commas", s)
			}
			sizes = append(sizes, n)
		}
	}
	bin := systemdtest.Binary(b)
	mgr := systemdtest.Manager(b).PID()
	fmt.Printf("%5s  %10s %10s %6s  %10s %11s %11s %10s %6s %13s %13s %10s  %-34s %-24s %s\n", "apps", "floor-run", "pod-run", "ratio",
		"floor-rec", "floor2-rec", "floor3-rec", "pod-rec", "ratio", "floor2/floor", "floor3/floor", "pod/floor3",
		"CPU/run: true, unitrun's", "exit hook", "rec CPU: manager, its children (floor -> pod)")
	stop := unit.Exec("ExecStop", "/bin/true", []string{"/bin/true"})
	forks2 := func(_ int, c *job.Cmd) { c.Properties = []unit.Property{stop} }
	forks3 := func(_ int, c *job.Cmd) {
		c.Properties = []unit.Property{stop, unit.Exec("ExecStopPost", "/bin/true", []string{"/bin/true"})}
	}
	hook := pod.HookBinary(bin)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for range b.N {
		var slopes strings.Builder
		var last struct {
			n           int
			pod, floor3 time.Duration
		}
		for _, n := range sizes {
			floorRun := floor(b, n, nil, "/bin/sleep", "600")
			podRun, _ := podTime(b, bin, n, "/bin/sleep", false, pod.NoIsolation)
			c0 := cpuOf(b, mgr)
			floorRec := floor(b, n, nil, "/bin/true")
			floorCPU := cpuOf(b, mgr).sub(c0)
			floor2Rec := floor(b, n, forks2, "/bin/true")
			c0 = cpuOf(b, mgr)
			floor3Rec := floor(b, n, forks3, "/bin/true")
			floor3CPU := cpuOf(b, mgr).sub(c0)
			podRec, podCPU := podTime(b, bin, n, "/bin/true", true, pod.NoIsolation)
			// Per exit, floor3's children are three /bin/true; the
			// pod's are the app's /bin/true, which the start hook
			// executes, and unitrun's processes: the start hook, its log
			// copier and the exit hook (the small hook binary's, else
			// unitrun's).
			trueCPU := ms(floor3CPU.children) / float64(3*n)
			unitrunCPU := ms(podCPU.children)/float64(n) - trueCPU
			hookCPU := "no hook binary"
			if hook != "" {
				c := ms(hookFloor(b, bin, hook, n).children)/float64(n) - trueCPU
				hookCPU = fmt.Sprintf("%.1f ms (%.2fx)", c, c/trueCPU)
			}
			fmt.Printf("%5d  %10.0f %10.0f %6.2f  %10.0f %11.0f %11.0f %10.0f %6.2f %13.2f %13.2f %10.2f  %-34s %-24s %s, %s -> %s, %s\n", n,
				ms(floorRun), ms(podRun), float64(podRun)/float64(floorRun),
				ms(floorRec), ms(floor2Rec), ms(floor3Rec), ms(podRec), float64(podRec)/float64(floorRec),
				float64(floor2Rec)/float64(floorRec), float64(floor3Rec)/float64(floorRec), float64(podRec)/float64(floor3Rec),
				fmt.Sprintf("%.1f, %.1f ms (%.1fx)", trueCPU, unitrunCPU, unitrunCPU/trueCPU), hookCPU,
				floorCPU.self, floorCPU.children, podCPU.self, podCPU.children)
			if last.n > 0 {
				d := float64(n - last.n)
				fmt.Fprintf(&slopes, "slope %d -> %d apps: pod-rec %.2f ms/app, floor3-rec %.2f ms/app\n", last.n, n,
					ms(podRec-last.pod)/d, ms(floor3Rec-last.floor3)/d)
			}
			last.n, last.pod, last.floor3 = n, podRec, floor3Rec
			b.ReportMetric(float64(podRun)/float64(floorRun), fmt.Sprintf("run-ratio-%d", n))
			b.ReportMetric(float64(podRec)/float64(floorRec), fmt.Sprintf("rec-ratio-%d", n))
			b.ReportMetric(float64(floor2Rec)/float64(floorRec), fmt.Sprintf("floor2-ratio-%d", n))
			b.ReportMetric(float64(floor3Rec)/float64(floorRec), fmt.Sprintf("floor3-ratio-%d", n))
		}
		fmt.Print(slopes.String())
	}
}

// floor starts n transient units running argv, the i-th set up by set
// (its name, extra properties; nothing if set is nil), at once and
// returns how long it took until every one
// had started (a long-running argv, stopped afterwards) or had ended and
// been reported (a short one).
func floor(b *testing.B, n int, set func(i int, c *job.Cmd), argv ...string) time.Duration {
	b.Helper()
	conn := systemdtest.Conn(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	long := len(argv) > 1
	cmds := make([]*job.Cmd, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range cmds {
		cmds[i] = job.CommandContext(ctx, conn, argv[0], argv[1:]...)
		if set != nil {
			set(i, cmds[i])
		}
		wg.Go(func() {
			if long {
				errs[i] = cmds[i].Start()
			} else {
				errs[i] = cmds[i].Run()
			}
		})
	}
	wg.Wait()
	d := time.Since(start)
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	if long {
		cancel()
		for _, c := range cmds {
			c.Wait()
		}
	}
	return d
}

// hookFloor measures the exit hook as systemd spawns it: n transient units
// running /bin/true at once, each named as an app's unit (where the hook
// runs) with the hook as its ExecStopPost=, as an app's unit has it,
// recording the exit of an app of a pod of n apps whose state alone is
// written (no unit of its own, whose names the floor's take) and whose
// records say they run; the pod is marked stopping, so that no exit ends
// it (and no unitrun runs to end it). It returns the manager's CPU time
// meanwhile: its children's, less n /bin/true, is what n exits of the
// hook cost.
func hookFloor(b *testing.B, bin, hook string, n int) cpuTime {
	b.Helper()
	var m strings.Builder
	fmt.Fprintf(&m, "name: hook%d\nexitPolicy: all\napps:\n", n)
	for i := range n {
		fmt.Fprintf(&m, "  - name: a%d\n    exec: [/bin/true]\n", i)
	}
	pm, err := pod.Parse([]byte(m.String()))
	if err != nil {
		b.Fatal(err)
	}
	dir := systemdtest.RunDir(b)
	if err := os.MkdirAll(record.Dir(dir, pm.Name), 0o700); err != nil {
		b.Fatal(err)
	}
	if err := pod.WriteState(dir, pm, []byte(m.String())); err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(record.Dir(dir, pm.Name))
	if err := record.MarkStopping(dir, pm.Name); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		s := record.AppStatus{Name: fmt.Sprintf("a%d", i), State: record.AppRunning, StartedAt: time.Now(), PID: 1}
		if err := record.WriteApp(dir, pm.Name, s); err != nil {
			b.Fatal(err)
		}
	}
	// Each unit is the app's, where the hook runs.
	set := func(i int, c *job.Cmd) {
		app := fmt.Sprintf("a%d", i)
		argv := []string{hook, bin, "pod", record.HookCommand, record.HookReapApp, "--state-dir", dir, pm.Name, app}
		c.Name, c.Properties = pod.AppUnit(pm.Name, app), []unit.Property{unit.Exec("ExecStopPost", hook, argv)}
	}
	mgr := systemdtest.Manager(b).PID()
	c0 := cpuOf(b, mgr)
	floor(b, n, set, "/bin/true")
	c := cpuOf(b, mgr).sub(c0)
	for i := range n {
		if s, err := record.ReadApp(dir, pm.Name, fmt.Sprintf("a%d", i)); err != nil || s.State != record.AppExited {
			b.Fatalf("the hook did not record the exit of a%d: %+v, %v", i, s, err)
		}
	}
	return c
}

// podTime runs a pod of n apps running app (with "600" as argument if it
// does not end by itself), with isolation iso, and returns how long it
// took until every app was running, or with recorded until every exit was
// recorded, and the manager's CPU time meanwhile (see cpuOf). The pod is
// removed afterwards.
func podTime(b *testing.B, bin string, n int, app string, recorded bool, iso pod.Isolation) (time.Duration, cpuTime) {
	b.Helper()
	dir := b.TempDir()
	var m strings.Builder
	fmt.Fprintf(&m, "name: bench%d\nisolation: %s\napps:\n", n, iso)
	for i := range n {
		fmt.Fprintf(&m, "  - name: a%d\n    exec: [%q", i, app)
		if !recorded {
			m.WriteString(`, "600"`)
		}
		m.WriteString("]\n")
	}
	path := filepath.Join(dir, "pod.yaml")
	if err := os.WriteFile(path, []byte(m.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	state := systemdtest.RunDir(b) // on a tmpfs, as /run/unitrun is
	r := &Runner{Mgr: systemdtest.Conn(b), StateDir: state}
	name := fmt.Sprintf("bench%d", n)
	defer func() {
		if err := r.Remove(context.Background(), name, true); err != nil {
			b.Error(err)
		}
	}()
	mgr := systemdtest.Manager(b).PID()
	c0 := cpuOf(b, mgr)
	start := time.Now()
	if out, err := exec.Command(bin, "pod", "run", "--detach", "--state-dir", state, path).CombinedOutput(); err != nil {
		b.Fatalf("pod run --detach: %v\n%s", err, out)
	}
	if !recorded {
		return time.Since(start), cpuOf(b, mgr).sub(c0)
	}
	for i := 0; i < n; {
		if _, err := record.ReadExitCode(state, name, fmt.Sprintf("a%d", i)); err == nil {
			i++
			continue
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(start), cpuOf(b, mgr).sub(c0)
}

// cpuTime is CPU time a process used itself and that of the children it
// has waited for.
type cpuTime struct{ self, children time.Duration }

func (c cpuTime) sub(d cpuTime) cpuTime { return cpuTime{c.self - d.self, c.children - d.children} }

// cpuOf reads the CPU times of process pid from /proc (utime+stime and
// cutime+cstime, in clock ticks of 10 ms, Linux's USER_HZ).
func cpuOf(b *testing.B, pid int) cpuTime {
	b.Helper()
	f := procStat(b, pid)
	var t [4]int64
	for i := range t {
		var err error
		if t[i], err = strconv.ParseInt(f[11+i], 10, 64); err != nil {
			b.Fatalf("/proc/%d/stat: %v", pid, err)
		}
	}
	const tick = 10 * time.Millisecond
	return cpuTime{time.Duration(t[0]+t[1]) * tick, time.Duration(t[2]+t[3]) * tick}
}

// BenchmarkIsolatedPods measures, for pods of 1 and 10 apps, the time from
// "unitrun pod run --detach" to every app running, for an isolated pod
// (the command returns once the pod's own systemd has booted, which is
// once its target's start job is done) against a host-mode pod of the
// same apps, in the same run, on the same manager. It prints one table;
// run it with bench/pods.sh COUNT isolated.
func BenchmarkIsolatedPods(b *testing.B) {
	bin := systemdtest.Binary(b)
	fmt.Printf("%5s  %12s %12s %6s\n", "apps", "host-run", "isolated-run", "ratio")
	for range b.N {
		for _, n := range []int{1, 10} {
			host, _ := podTime(b, bin, n, "/bin/sleep", false, pod.NoIsolation)
			isolated, _ := podTime(b, bin, n, "/bin/sleep", false, pod.Namespaces)
			fmt.Printf("%5d  %12s %12s %6.2f\n", n, host.Round(time.Millisecond), isolated.Round(time.Millisecond), float64(isolated)/float64(host))
			b.ReportMetric(float64(isolated)/float64(host), fmt.Sprintf("isolated-ratio-%d", n))
		}
	}
}

// BenchmarkImagePod times "unitrun pod run --detach" of an isolated pod of
// one app whose root is an image already pulled (the second start: the
// store's layers mounted with overlayfs, never copied) against the same
// pod with the same files as a host directory (rootfs), interleaved, b.N
// pairs, and prints each pair and the median of the ratios. Run it with
// bench/images.sh.
func BenchmarkImagePod(b *testing.B) {
	bin := systemdtest.Binary(b)
	reg := imagetest.NewRegistry(b)
	ref := reg.Push(b, "bench:1", imagetest.Image{Layers: []imagetest.Layer{imagetest.ToolLayer(b, "/bin/tool")}})
	images := b.TempDir()
	st, err := image.Open(images)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := registry.Pull(context.Background(), st, ref, image.PullOptions{}); err != nil {
		b.Fatal(err)
	}
	root := b.TempDir()
	tool, err := os.ReadFile(imagetest.Tool(b))
	if err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "bin/tool"), tool, 0o755); err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	manifest := func(name, field string) string {
		path := filepath.Join(dir, name+".yaml")
		text := fmt.Sprintf("name: %s\nisolation: namespaces\napps:\n  - name: a\n    %s\n    exec: [/bin/tool, sleep, \"600\"]\n", name, field)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
		return path
	}
	pods := []struct{ name, path string }{
		{"benchrootfs", manifest("benchrootfs", "rootfs: "+root)},
		{"benchimage", manifest("benchimage", "image: "+ref)},
	}
	state := systemdtest.RunDir(b) // on a tmpfs, as /run/unitrun is
	r := &Runner{Mgr: systemdtest.Conn(b), StateDir: state, ImageDir: images}
	var ratios []float64
	fmt.Printf("%12s %12s %6s\n", "rootfs", "image", "ratio")
	for range b.N {
		var took [2]time.Duration
		for i, p := range pods {
			start := time.Now()
			if out, err := exec.Command(bin, "pod", "run", "--detach", "--state-dir", state, "--image-dir", images, p.path).CombinedOutput(); err != nil {
				b.Fatalf("pod run --detach %s: %v\n%s", p.name, err, out)
			}
			took[i] = time.Since(start)
			if err := r.Remove(context.Background(), p.name, true); err != nil {
				b.Fatal(err)
			}
		}
		ratios = append(ratios, float64(took[1])/float64(took[0]))
		fmt.Printf("%12s %12s %6.2f\n", took[0].Round(time.Millisecond), took[1].Round(time.Millisecond), ratios[len(ratios)-1])
	}
	slices.Sort(ratios)
	fmt.Printf("median ratio image/rootfs over %d pairs: %.2f\n", len(ratios), ratios[len(ratios)/2])
	b.ReportMetric(ratios[len(ratios)/2], "median-ratio")
}
