package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// A timeline is when each step of one Pod's start happened, as kubectl,
// the node's log and the manager saw it.
type timeline struct {
	name      string
	seen      time.Time // kubectl's watch first showed the Pod
	nodeSees  time.Time // the node's CreatePod began
	created   time.Time // the unitrun pod was created
	started   time.Time // the unitrun pod's start returned
	active    time.Time // the container's unit became active (ActiveEnterTimestamp)
	phase     time.Time // kubectl's watch first showed phase Running
	running   time.Time // kubectl's watch first showed the container running
	container string    // the container's unit
}

// watchStarts applies yaml, whose n Pods are labelled batch, and returns
// each Pod's timeline once kubectl shows every container running, with
// the times the apply began and returned.
func (c *cluster) watchStarts(t *testing.T, batch string, n int, yaml string) (start, applied time.Time, tl []*timeline) {
	cmd := exec.Command("kubectl", "--kubeconfig", c.kubeconfig, "get", "pods", "-l", "batch="+batch, "-w",
		"-o", `jsonpath={.metadata.name}|{.status.phase}|{.status.containerStatuses[0].state.running.startedAt}|{.status.containerStatuses[0].containerID}{"\n"}`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	// The watch is set up before the Pods exist: its first event of a Pod
	// is the Pod's creation.
	time.Sleep(time.Second)
	start = time.Now()
	c.apply(t, yaml)
	applied = time.Now()
	pods := map[string]*timeline{}
	done := 0
	lines := bufio.NewScanner(out)
	for done < n && lines.Scan() {
		now := time.Now()
		f := strings.Split(lines.Text(), "|")
		if len(f) != 4 {
			continue
		}
		p := pods[f[0]]
		if p == nil {
			p = &timeline{name: f[0], seen: now}
			pods[f[0]] = p
		}
		if f[1] == "Running" && p.phase.IsZero() {
			p.phase = now
		}
		if f[2] != "" && p.running.IsZero() {
			p.running, p.container = now, strings.TrimPrefix(f[3], "unitrun://")
			done++
		}
	}
	if done < n {
		t.Fatalf("the watch ended with %d of %d Pods' containers running: %v", done, n, lines.Err())
	}
	for _, p := range pods {
		p.active = c.activeEnter(t, p.container)
		tl = append(tl, p)
	}
	c.nodeLogTimes(t, tl)
	return start, applied, tl
}

// activeEnter is unit's ActiveEnterTimestamp on the embedded manager.
func (c *cluster) activeEnter(t *testing.T, unit string) time.Time {
	cmd := exec.Command("systemctl", "--user", "show", "--timestamp=us+utc", "-p", "ActiveEnterTimestamp", "--value", unit)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+c.embedded)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("systemctl --user show %s: %v", unit, err)
	}
	at, err := time.Parse("Mon 2006-01-02 15:04:05.000000 UTC", strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("ActiveEnterTimestamp of %s: %v", unit, err)
	}
	return at
}

// nodeLogRE matches the node's log lines that time a Pod's start.
var nodeLogRE = regexp.MustCompile(`^time=(\S+) level=INFO msg=(created|started) pod=default/(\S+) .*took=(\S+)`)

// nodeLogTimes fills in when the node began and ended the creation and
// the start of each Pod, from the node's log.
func (c *cluster) nodeLogTimes(t *testing.T, tl []*timeline) {
	data, err := os.ReadFile(c.path("unitrun-node.log"))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*timeline{}
	for _, p := range tl {
		byName[p.name] = p
	}
	for _, line := range strings.Split(string(data), "\n") {
		m := nodeLogRE.FindStringSubmatch(line)
		if m == nil || byName[m[3]] == nil {
			continue
		}
		at, err1 := time.Parse(time.RFC3339Nano, m[1])
		took, err2 := time.ParseDuration(m[4])
		if err1 != nil || err2 != nil {
			continue
		}
		p := byName[m[3]]
		switch m[2] {
		case "created":
			p.created, p.nodeSees = at, at.Add(-took)
		case "started":
			p.started = at
		}
	}
}

// report logs the times from the apply's start to every container
// running and from each Pod's creation (as the watch or the node saw it
// first) to its container running, each step's times from start (median
// and max over the Pods), and each Pod's timeline.
func report(t *testing.T, n int, start, applied time.Time, tl []*timeline) {
	slices.SortFunc(tl, func(a, b *timeline) int { return a.running.Compare(b.running) })
	var perPod []float64
	for _, p := range tl {
		created := p.seen
		if !p.nodeSees.IsZero() && p.nodeSees.Before(created) {
			created = p.nodeSees
		}
		perPod = append(perPod, p.running.Sub(created).Seconds())
	}
	slices.Sort(perPod)
	t.Logf("%d Pod(s): apply to every container running %.3f s (kubectl apply returned at %.3f s); per Pod, creation to container running: median %.3f s, max %.3f s",
		n, tl[len(tl)-1].running.Sub(start).Seconds(), applied.Sub(start).Seconds(), perPod[len(perPod)/2], perPod[len(perPod)-1])
	steps := []struct {
		what string
		at   func(*timeline) time.Time
	}{
		{"created (kubectl watch)", func(p *timeline) time.Time { return p.seen }},
		{"node's CreatePod begins", func(p *timeline) time.Time { return p.nodeSees }},
		{"unitrun pod created", func(p *timeline) time.Time { return p.created }},
		{"container unit active", func(p *timeline) time.Time { return p.active }},
		{"unitrun pod start returned", func(p *timeline) time.Time { return p.started }},
		{"phase Running (kubectl watch)", func(p *timeline) time.Time { return p.phase }},
		{"container running (kubectl watch)", func(p *timeline) time.Time { return p.running }},
	}
	for _, s := range steps {
		var d []float64
		for _, p := range tl {
			if at := s.at(p); !at.IsZero() {
				d = append(d, at.Sub(start).Seconds())
			}
		}
		if len(d) == 0 {
			t.Logf("%d Pod(s): %-34s not seen", n, s.what)
			continue
		}
		slices.Sort(d)
		t.Logf("%d Pod(s): %-34s median %.3f s, max %.3f s after the apply began", n, s.what, d[len(d)/2], d[len(d)-1])
	}
	for _, p := range tl {
		rel := func(at time.Time) string {
			if at.IsZero() {
				return "-"
			}
			return fmt.Sprintf("%.3f", at.Sub(start).Seconds())
		}
		t.Logf("  %s: seen %s, node %s, created %s, active %s, started %s, phase %s, running %s", filepath.Base(p.name),
			rel(p.seen), rel(p.nodeSees), rel(p.created), rel(p.active), rel(p.started), rel(p.phase), rel(p.running))
	}
}

// deleteLogRE matches the node's log line of a Pod's deletion.
var deleteLogRE = regexp.MustCompile(`^time=(\S+) level=INFO msg=deleted pod=default/(\S+) .*stopped_after=(\S+) removed_after=(\S+) took=(\S+)`)

// reportDeletes logs, from the node's log, when the deletion of each of
// the n Pods whose names start with prefix began, its unitrun pod had
// stopped, its object was removed and the deletion ended, from start
// (median and max). The node logs a deletion once it has removed the
// unitrun pod, after the object: it waits for the n lines.
func (c *cluster) reportDeletes(t *testing.T, n int, prefix string, start time.Time) {
	var lines []string
	c.eventually(30*time.Second, "the node logs every deletion", func() error {
		data, err := os.ReadFile(c.path("unitrun-node.log"))
		if err != nil {
			return err
		}
		lines = lines[:0]
		for _, line := range strings.Split(string(data), "\n") {
			if m := deleteLogRE.FindStringSubmatch(line); m != nil && strings.HasPrefix(m[2], prefix) {
				lines = append(lines, line)
			}
		}
		if len(lines) < n {
			return fmt.Errorf("%d of %d deletions logged", len(lines), n)
		}
		return nil
	})
	var began, stopped, removed, ended []float64
	for _, line := range lines {
		m := deleteLogRE.FindStringSubmatch(line)
		at, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			continue
		}
		var d [3]time.Duration
		for i := range d {
			d[i], _ = time.ParseDuration(m[3+i])
		}
		b := at.Add(-d[2])
		began = append(began, b.Sub(start).Seconds())
		stopped = append(stopped, b.Add(d[0]).Sub(start).Seconds())
		removed = append(removed, b.Add(d[1]).Sub(start).Seconds())
		ended = append(ended, at.Sub(start).Seconds())
	}
	for _, s := range []struct {
		what string
		d    []float64
	}{{"node's deletion begins", began}, {"unitrun pod stopped", stopped}, {"object removed by the node", removed}, {"unitrun pod removed", ended}} {
		slices.Sort(s.d)
		t.Logf("%d Pod(s): %-34s median %.3f s, max %.3f s after the delete began", n, s.what, s.d[len(s.d)/2], s.d[len(s.d)-1])
	}
}

// throttledRE matches client-go's log line (kubectl -v=3 and up) of a
// request that its client-side rate limit held back more than 50 ms.
var throttledRE = regexp.MustCompile(`"Waited before sending request" delay="([^"]+)" reason="client-side throttling`)

// deleteThrottled runs kubectl delete with args and returns how long
// kubectl's own rate limit (client-go's default for kubectl: 5 requests a
// second, a burst of 10) held its requests back, from its log: once it has
// sent the deletions, kubectl waits for each object in turn to be gone, a
// GET each (and a watch of one still there).
func (c *cluster) deleteThrottled(t *testing.T, args ...string) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", c.kubeconfig, "-v=3", "delete"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl delete %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	var sum time.Duration
	for _, m := range throttledRE.FindAllStringSubmatch(stderr.String(), -1) {
		if d, err := time.ParseDuration(m[1]); err == nil {
			sum += d
		}
	}
	return sum
}
