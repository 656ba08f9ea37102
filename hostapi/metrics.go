package hostapi

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/pod"
)

// metrics are the daemon's Prometheus metrics, in a registry of its own
// (no process-wide default registry), served at GET /metrics.
type metrics struct {
	reg      *prometheus.Registry
	started  *prometheus.CounterVec
	finished *prometheus.CounterVec
	duration *prometheus.HistogramVec
	refused  *prometheus.CounterVec
}

var (
	queueDesc = prometheus.NewDesc("unitrun_queue_depth",
		"Calls queued behind the running job of an exclusive op.", []string{"op"}, nil)
	liveDesc = prometheus.NewDesc("unitrun_live_jobs",
		"Jobs queued or running, all ops (the limit max_live_jobs applies to it).", nil, nil)
	podsDesc = prometheus.NewDesc("unitrun_pods",
		"Pods in the pod state dir, by phase (the unreadable ones left out).", []string{"phase"}, nil)
	unreadableDesc = prometheus.NewDesc("unitrun_pods_unreadable",
		"Pods in the pod state dir whose status cannot be read.", nil, nil)
)

// podPhases are the phases unitrun_pods reports, each even at zero.
var podPhases = []pod.Phase{pod.PodPending, pod.PodRunning, pod.PodSucceeded, pod.PodFailed}

func newMetrics(d *Daemon) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		started: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "unitrun_jobs_started_total",
			Help: "Jobs whose unit this daemon started, by op.",
		}, []string{"op"}),
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "unitrun_jobs_finished_total",
			Help: "Jobs whose final record this daemon stored, by op and final state (succeeded, failed, canceled).",
		}, []string{"op", "state"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "unitrun_job_duration_seconds",
			Help:    "Time from a job's start to its end, by op, for jobs that started.",
			Buckets: prometheus.ExponentialBuckets(0.05, 4, 10), // 50ms .. ~3.6h
		}, []string{"op"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "unitrun_calls_refused_total",
			Help: "Calls refused before any job started, by error code (unknown_op, unauthorized, bad_args, busy, ...).",
		}, []string{"reason"}),
	}
	m.reg.MustRegister(m.started, m.finished, m.duration, m.refused, &stateCollector{d},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// handler serves the registry in the Prometheus text format (or another
// that the scraper asks for). A metric that cannot be read, such as
// unitrun_pods with a pod state dir that cannot be listed, is left out;
// the others are served.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// jobStarted counts a job whose unit is being started.
func (m *metrics) jobStarted(r *api.Record) { m.started.WithLabelValues(r.Op).Inc() }

// jobFinished counts a job's final record and, for a job that started,
// observes how long it ran.
func (m *metrics) jobFinished(r *api.Record) {
	m.finished.WithLabelValues(r.Op, string(r.State)).Inc()
	if r.StartedAt != nil && r.FinishedAt != nil {
		m.duration.WithLabelValues(r.Op).Observe(r.FinishedAt.Sub(*r.StartedAt).Seconds())
	}
}

// callRefused counts a refused call by its error code.
func (m *metrics) callRefused(code string) { m.refused.WithLabelValues(code).Inc() }

// stateCollector reads the gauges from the daemon when scraped: queue
// depths, live jobs and, when the daemon has a PodStateDir, pods by phase
// and the pods whose status cannot be read.
type stateCollector struct{ d *Daemon }

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- queueDesc
	ch <- liveDesc
	ch <- podsDesc
	ch <- unreadableDesc
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	d := c.d
	d.mu.Lock()
	for _, op := range d.ops.Load().list {
		if op.Exclusive {
			ch <- prometheus.MustNewConstMetric(queueDesc, prometheus.GaugeValue, float64(len(d.queues[op.Name])), op.Name)
		}
	}
	ch <- prometheus.MustNewConstMetric(liveDesc, prometheus.GaugeValue, float64(len(d.live)))
	d.mu.Unlock()
	if d.PodStateDir == "" {
		return
	}
	pods, err := pod.List(d.PodStateDir)
	// List joins one error for each pod it could not read.
	unreadable, ok := err.(interface{ Unwrap() []error })
	if err != nil && !ok {
		ch <- prometheus.NewInvalidMetric(podsDesc, err)
		ch <- prometheus.NewInvalidMetric(unreadableDesc, err)
		return
	}
	n := 0
	if ok {
		n = len(unreadable.Unwrap())
	}
	ch <- prometheus.MustNewConstMetric(unreadableDesc, prometheus.GaugeValue, float64(n))
	phases := make(map[pod.Phase]int, len(podPhases))
	for _, p := range pods {
		phases[p.Phase]++
	}
	for _, ph := range podPhases {
		ch <- prometheus.MustNewConstMetric(podsDesc, prometheus.GaugeValue, float64(phases[ph]), string(ph))
	}
}
