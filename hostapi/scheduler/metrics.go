package scheduler

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/VictoriaMetrics/metrics"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/pod"
)

// daemonMetrics are the daemon's Prometheus metrics, in a set of its own (no
// process-wide default set), served at GET /metrics in the text format.
//
// They are kept by github.com/VictoriaMetrics/metrics rather than
// Prometheus's client_golang: the daemon shares one binary with the CLI
// and the pod hooks, and client_golang (with the protobuf and procfs
// packages it links) made every one of those processes start about a
// quarter slower (docs/performance.md, "Process start").
type daemonMetrics struct {
	set *metrics.Set
}

// durationBuckets are the upper bounds of unitrun_job_duration_seconds:
// 50ms, then each four times the last, to about 3.6h.
var durationBuckets = metrics.ExponentialBuckets(0.05, 4, 10)

// podPhases are the phases unitrun_pods reports, each even at zero.
var podPhases = []pod.Phase{pod.PodPending, pod.PodRunning, pod.PodSucceeded, pod.PodFailed}

func newMetrics(d *Scheduler) *daemonMetrics {
	metrics.ExposeMetadata(true) // # TYPE lines, which scrapers need for histograms
	m := &daemonMetrics{set: metrics.NewSet()}
	m.set.RegisterMetricsWriter(func(w io.Writer) { writeState(w, d) })
	m.set.RegisterMetricsWriter(metrics.WriteProcessMetrics) // go_* and process_*
	return m
}

// handler serves the set in the Prometheus text format. A metric that
// cannot be read, such as unitrun_pods with a pod state dir that cannot be
// listed, is left out; the others are served.
func (m *daemonMetrics) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		m.set.WritePrometheus(w)
	})
}

// jobStarted counts a job whose unit is being started.
func (m *daemonMetrics) jobStarted(r *api.Record) {
	m.set.GetOrCreateCounter(series("unitrun_jobs_started_total", "op", r.Op)).Inc()
}

// jobFinished counts a job's final record and, for a job that started,
// observes how long it ran.
func (m *daemonMetrics) jobFinished(r *api.Record) {
	m.set.GetOrCreateCounter(series("unitrun_jobs_finished_total", "op", r.Op, "state", string(r.State))).Inc()
	if r.StartedAt != nil && r.FinishedAt != nil {
		m.set.GetOrCreatePrometheusHistogramExt(series("unitrun_job_duration_seconds", "op", r.Op), durationBuckets).
			Update(r.FinishedAt.Sub(*r.StartedAt).Seconds())
	}
}

// callRefused counts a refused call by its error code.
func (m *daemonMetrics) callRefused(code string) {
	m.set.GetOrCreateCounter(series("unitrun_calls_refused_total", "reason", code)).Inc()
}

// writeState writes the gauges read from the daemon at each scrape: queue
// depths, live jobs and, when the daemon has a PodStateDir, pods by phase
// and the pods whose status cannot be read.
func writeState(w io.Writer, d *Scheduler) {
	d.mu.Lock()
	var queues []string
	for _, op := range d.ops.Load().list {
		if op.Exclusive {
			queues = append(queues, fmt.Sprintf("%s %d\n", series("unitrun_queue_depth", "op", op.Name), len(d.queues[op.Name])))
		}
	}
	live := len(d.live)
	d.mu.Unlock()
	if len(queues) > 0 {
		metrics.WriteMetadataIfNeeded(w, "unitrun_queue_depth", "gauge")
		io.WriteString(w, strings.Join(queues, ""))
	}
	metrics.WriteGaugeUint64(w, "unitrun_live_jobs", uint64(live))
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
	metrics.WriteGaugeUint64(w, "unitrun_pods_unreadable", uint64(n))
	phases := make(map[pod.Phase]int, len(podPhases))
	for _, p := range pods {
		phases[p.Phase]++
	}
	metrics.WriteMetadataIfNeeded(w, "unitrun_pods", "gauge")
	for _, ph := range podPhases {
		fmt.Fprintf(w, "%s %d\n", series("unitrun_pods", "phase", string(ph)), phases[ph])
	}
}

// labelValue escapes a label value for the text format.
var labelValue = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// series names one series of family: its name and the label pairs given
// as name, value, name, value ...
func series(family string, labels ...string) string {
	var b strings.Builder
	b.WriteString(family)
	for i := 0; i+1 < len(labels); i += 2 {
		if i == 0 {
			b.WriteByte('{')
		} else {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `%s="%s"`, labels[i], labelValue.Replace(labels[i+1]))
	}
	if len(labels) > 0 {
		b.WriteByte('}')
	}
	return b.String()
}
