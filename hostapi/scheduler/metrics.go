package scheduler

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/pod"
)

// daemonMetrics are the daemon's Prometheus metrics, in a registry of its
// own (no process-wide one), served at GET /metrics in the text format.
//
// They are kept here rather than by a metrics library: the daemon shares
// one binary with the CLI and the pod hooks, whose every process runs the
// package inits of all it links. Prometheus's client_golang (protobuf,
// procfs) made each start about a quarter slower; VictoriaMetrics/metrics,
// which replaced it, read the cgroup's pressure files and the Go runtime's
// metric descriptions in each, 0.3 to 0.45 ms of the CPU of a "unitrun
// run" (docs/performance.md, "The CLI").
type daemonMetrics struct {
	mu       sync.Mutex
	counters map[string]map[string]uint64 // family → labels (see labels) → count
	hists    map[string]*histogram        // labels → unitrun_job_duration_seconds
	state    func(w io.Writer)            // the gauges read at each scrape
}

// histogram is one series of a Prometheus histogram over durationBuckets.
type histogram struct {
	counts []uint64 // counts[i]: observations of at most durationBuckets[i]
	count  uint64
	sum    float64
}

// durationBuckets are the upper bounds of unitrun_job_duration_seconds:
// 50ms, then each four times the last, to about 3.6h.
var durationBuckets = []float64{0.05, 0.2, 0.8, 3.2, 12.8, 51.2, 204.8, 819.2, 3276.8, 13107.2}

// podPhases are the phases unitrun_pods reports, each even at zero.
var podPhases = []pod.Phase{pod.PodPending, pod.PodRunning, pod.PodSucceeded, pod.PodFailed}

func newMetrics(d *Scheduler) *daemonMetrics {
	return &daemonMetrics{
		counters: map[string]map[string]uint64{},
		hists:    map[string]*histogram{},
		state:    func(w io.Writer) { writeState(w, d) },
	}
}

// handler serves the metrics in the Prometheus text format: each family
// with a "# TYPE" line and an empty "# HELP" line (docs/hostapi.md has
// their help), then the Go runtime's and the process's. A metric that
// cannot be read, such as unitrun_pods with a pod state dir that cannot be
// listed, is left out; the others are served.
func (m *daemonMetrics) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		var b strings.Builder
		m.write(&b)
		m.state(&b)
		writeProcessMetrics(&b)
		io.WriteString(w, b.String())
	})
}

// write writes the counters and the histogram, each family's series in
// the order of their labels.
func (m *daemonMetrics) write(w io.Writer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, family := range slices.Sorted(maps.Keys(m.counters)) {
		writeType(w, family, "counter")
		for _, l := range slices.Sorted(maps.Keys(m.counters[family])) {
			fmt.Fprintf(w, "%s %d\n", series(family, l), m.counters[family][l])
		}
	}
	if len(m.hists) == 0 {
		return
	}
	const family = "unitrun_job_duration_seconds"
	writeType(w, family, "histogram")
	for _, l := range slices.Sorted(maps.Keys(m.hists)) {
		h := m.hists[l]
		with := func(le string) string { return strings.TrimPrefix(l+`,le="`+le+`"`, ",") }
		for i, b := range durationBuckets {
			fmt.Fprintf(w, "%s %d\n", series(family+"_bucket", with(formatFloat(b))), h.counts[i])
		}
		fmt.Fprintf(w, "%s %d\n", series(family+"_bucket", with("+Inf")), h.count)
		fmt.Fprintf(w, "%s %s\n", series(family+"_sum", l), formatFloat(h.sum))
		fmt.Fprintf(w, "%s %d\n", series(family+"_count", l), h.count)
	}
}

// inc adds one to the counter of family with labels.
func (m *daemonMetrics) inc(family, labels string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.counters[family] == nil {
		m.counters[family] = map[string]uint64{}
	}
	m.counters[family][labels]++
}

// jobStarted counts a job whose unit is being started.
func (m *daemonMetrics) jobStarted(r *api.Record) {
	m.inc("unitrun_jobs_started_total", labels("op", r.Op))
}

// jobFinished counts a job's final record and, for a job that started,
// observes how long it ran.
func (m *daemonMetrics) jobFinished(r *api.Record) {
	m.inc("unitrun_jobs_finished_total", labels("op", r.Op, "state", string(r.State)))
	if r.StartedAt == nil || r.FinishedAt == nil {
		return
	}
	v := r.FinishedAt.Sub(*r.StartedAt).Seconds()
	l := labels("op", r.Op)
	m.mu.Lock()
	defer m.mu.Unlock()
	h := m.hists[l]
	if h == nil {
		h = &histogram{counts: make([]uint64, len(durationBuckets))}
		m.hists[l] = h
	}
	for i, b := range durationBuckets {
		if v <= b {
			h.counts[i]++
		}
	}
	h.count++
	h.sum += v
}

// callRefused counts a refused call by its error code.
func (m *daemonMetrics) callRefused(code string) {
	m.inc("unitrun_calls_refused_total", labels("reason", code))
}

// writeState writes the gauges read from the daemon at each scrape: queue
// depths, live jobs and, when the daemon has a PodStateDir, pods by phase
// and the pods whose status cannot be read.
func writeState(w io.Writer, d *Scheduler) {
	d.mu.Lock()
	var queues []string
	for _, op := range d.ops.Load().list {
		if op.Exclusive {
			queues = append(queues, fmt.Sprintf("%s %d\n", series("unitrun_queue_depth", labels("op", op.Name)), len(d.queues[op.Name])))
		}
	}
	live := len(d.live)
	d.mu.Unlock()
	if len(queues) > 0 {
		writeType(w, "unitrun_queue_depth", "gauge")
		io.WriteString(w, strings.Join(queues, ""))
	}
	writeGauge(w, "unitrun_live_jobs", float64(live))
	if d.PodStateDir == "" {
		return
	}
	pods, err := pod.List(d.PodStateDir)
	// List joins one error for each pod it could not read.
	unreadable, ok := err.(interface{ Unwrap() []error })
	if err != nil && !ok {
		return
	}
	n := 0
	if ok {
		n = len(unreadable.Unwrap())
	}
	writeGauge(w, "unitrun_pods_unreadable", float64(n))
	phases := make(map[pod.Phase]int, len(podPhases))
	for _, p := range pods {
		phases[p.Phase]++
	}
	writeType(w, "unitrun_pods", "gauge")
	for _, ph := range podPhases {
		fmt.Fprintf(w, "%s %d\n", series("unitrun_pods", labels("phase", string(ph))), phases[ph])
	}
}

// writeType writes the "# HELP" (empty) and "# TYPE" lines of family.
func writeType(w io.Writer, family, typ string) {
	fmt.Fprintf(w, "# HELP %s\n# TYPE %s %s\n", family, family, typ)
}

// writeGauge writes the family name of one gauge and its value.
func writeGauge(w io.Writer, name string, v float64) {
	writeType(w, name, "gauge")
	fmt.Fprintf(w, "%s %s\n", name, formatFloat(v))
}

// writeCounter writes the family name of one counter and its value.
func writeCounter(w io.Writer, name string, v float64) {
	writeType(w, name, "counter")
	fmt.Fprintf(w, "%s %s\n", name, formatFloat(v))
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// labels are the label pairs given as name, value, name, value ... in the
// text format: name="value",name="value".
func labels(pairs ...string) string {
	escape := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	var b strings.Builder
	for i := 0; i+1 < len(pairs); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `%s="%s"`, pairs[i], escape.Replace(pairs[i+1]))
	}
	return b.String()
}

// series names one series of family with labels (see labels).
func series(family, labels string) string {
	if labels == "" {
		return family
	}
	return family + "{" + labels + "}"
}
