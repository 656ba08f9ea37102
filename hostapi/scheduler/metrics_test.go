package scheduler

import (
	"encoding/json"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/record"
)

// scrape gets /metrics from the daemon at sock and parses the text format.
func scrape(t *testing.T, sock string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := unixHTTP(sock).Get("http://unitrun/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("/metrics: %s, Content-Type %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics: parsing: %v", err)
	}
	return fams
}

// sample returns the value of the metric of family name whose labels are
// labels ("k=v" pairs, all of the metric's labels): a counter's or gauge's
// value, a histogram's sample count. It fails the test when there is none.
func sample(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	for _, m := range fams[name].GetMetric() {
		var got []string
		for _, l := range m.GetLabel() {
			got = append(got, l.GetName()+"="+l.GetValue())
		}
		if strings.Join(got, ",") != strings.Join(labels, ",") {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	t.Fatalf("/metrics: no %s{%s}", name, strings.Join(labels, ","))
	return 0
}

// postOp calls op with args on the daemon at sock and returns the status and
// the decoded body.
func postOp(t *testing.T, sock, op, body string) (int, map[string]any) {
	t.Helper()
	resp, err := unixHTTP(sock).Post("http://unitrun/v1/ops/"+op, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("POST %s: %v", op, err)
	}
	return resp.StatusCode, v
}

// TestMetricsDaemon runs jobs with known outcomes on the real daemon
// binary and checks that /metrics counts each exactly.
func TestMetricsDaemon(t *testing.T) {
	d := systemdtest.StartDaemon(t, systemdtest.OutcomeOps)
	for _, c := range []struct{ op, body, state string }{
		{"ok", `{"wait": true}`, "succeeded"},
		{"ok", `{"wait": true}`, "succeeded"},
		{"exit", `{"args": ["3"], "wait": true}`, "failed"},
	} {
		if status, rec := postOp(t, d.API, c.op, c.body); status != 200 || rec["state"] != c.state {
			t.Fatalf("call %s: %d %v, want 200 and state %s", c.op, status, rec, c.state)
		}
	}
	if status, body := postOp(t, d.API, "nobody", ""); status != 403 {
		t.Fatalf("call nobody as root: %d %v, want 403", status, body)
	}
	_, running := postOp(t, d.API, "hold", `{"args": ["a"]}`)
	_, queued := postOp(t, d.API, "hold", `{"args": ["b"]}`)
	fams := scrape(t, d.API)
	if got := sample(t, fams, "unitrun_queue_depth", "op=hold"); got != 1 {
		t.Errorf("unitrun_queue_depth{op=hold} = %v, want 1", got)
	}
	if got := sample(t, fams, "unitrun_live_jobs"); got != 2 {
		t.Errorf("unitrun_live_jobs = %v, want 2", got)
	}
	for _, id := range []any{queued["id"], running["id"]} {
		req, _ := http.NewRequest("DELETE", "http://unitrun/v1/jobs/"+id.(string), nil)
		resp, err := unixHTTP(d.API).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}

	fams = scrape(t, d.API)
	want := []struct {
		name   string
		labels []string
		value  float64
	}{
		{"unitrun_jobs_started_total", []string{"op=ok"}, 2},
		{"unitrun_jobs_started_total", []string{"op=exit"}, 1},
		{"unitrun_jobs_started_total", []string{"op=hold"}, 1}, // the queued one never started
		{"unitrun_jobs_finished_total", []string{"op=ok", "state=succeeded"}, 2},
		{"unitrun_jobs_finished_total", []string{"op=exit", "state=failed"}, 1},
		{"unitrun_jobs_finished_total", []string{"op=hold", "state=canceled"}, 2},
		{"unitrun_job_duration_seconds", []string{"op=ok"}, 2},
		{"unitrun_job_duration_seconds", []string{"op=exit"}, 1},
		{"unitrun_job_duration_seconds", []string{"op=hold"}, 1},
		{"unitrun_calls_refused_total", []string{"reason=unauthorized"}, 1},
		{"unitrun_queue_depth", []string{"op=hold"}, 0},
		{"unitrun_live_jobs", nil, 0},
	}
	for _, w := range want {
		if got := sample(t, fams, w.name, w.labels...); got != w.value {
			t.Errorf("%s{%s} = %v, want %v", w.name, strings.Join(w.labels, ","), got, w.value)
		}
	}
	if n := len(fams["unitrun_jobs_finished_total"].GetMetric()); n != 3 {
		t.Errorf("unitrun_jobs_finished_total has %d series, want the 3 above", n)
	}
	if n := len(fams["unitrun_calls_refused_total"].GetMetric()); n != 1 {
		t.Errorf("unitrun_calls_refused_total has %d series, want 1", n)
	}
	for _, h := range fams["unitrun_job_duration_seconds"].GetMetric() {
		b := h.GetHistogram().GetBucket()
		if len(b) != len(durationBuckets)+1 || b[0].GetUpperBound() != 0.05 || !math.IsInf(b[len(b)-1].GetUpperBound(), 1) || b[len(b)-1].GetCumulativeCount() != h.GetHistogram().GetSampleCount() {
			t.Errorf("unitrun_job_duration_seconds buckets %v, want %v and +Inf, of all samples", b, durationBuckets)
		}
	}
	// The process's own, read at the scrape.
	for _, name := range []string{"go_goroutines", "go_threads", "go_memstats_heap_alloc_bytes", "process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds", "process_max_fds", "process_start_time_seconds"} {
		if got := sample(t, fams, name); got <= 0 {
			t.Errorf("%s = %v, want more than 0", name, got)
		}
	}
	if start := sample(t, fams, "process_start_time_seconds"); time.Since(time.Unix(int64(start), 0)) > time.Hour {
		t.Errorf("process_start_time_seconds = %v, not the daemon's start", start)
	}
}

// TestMetricsPods checks unitrun_pods against pod status files, and that
// two daemons in one process keep metrics of their own.
func TestMetricsPods(t *testing.T) {
	d, dir := newTestScheduler(t, systemdtest.Conn(t), "")
	d.PodStateDir = dir + "/pods-state"
	code0, code2 := 0, 2
	for _, s := range []pod.PodStatus{
		{Name: "a", Phase: pod.PodRunning, ExitPolicy: record.FirstFailure},
		{Name: "b", Phase: pod.PodRunning, ExitPolicy: record.FirstFailure},
		{Name: "c", Phase: pod.PodSucceeded, ExitCode: &code0, ExitPolicy: record.FirstFailure},
		{Name: "d", Phase: pod.PodFailed, ExitCode: &code2, ExitPolicy: record.FirstFailure},
	} {
		if err := pod.WritePod(d.PodStateDir, s); err != nil {
			t.Fatal(err)
		}
	}
	other, _ := newTestScheduler(t, systemdtest.Conn(t), "")
	call(t, other, "echo", "x")
	api, _ := serveTest(t, d)
	fams := scrape(t, api)
	for phase, want := range map[string]float64{"Pending": 0, "Running": 2, "Succeeded": 1, "Failed": 1} {
		if got := sample(t, fams, "unitrun_pods", "phase="+phase); got != want {
			t.Errorf("unitrun_pods{phase=%s} = %v, want %v", phase, got, want)
		}
	}
	if got := sample(t, fams, "unitrun_pods_unreadable"); got != 0 {
		t.Errorf("unitrun_pods_unreadable = %v, want 0", got)
	}
	if n := len(fams["unitrun_jobs_started_total"].GetMetric()); n != 0 {
		t.Errorf("a daemon that ran no job reports %d unitrun_jobs_started_total series, want 0 (another daemon's leak in)", n)
	}

	// Broken status files are counted apart; the readable pods are
	// reported by phase as before.
	for _, name := range []string{"a", "d"} {
		if err := os.WriteFile(filepath.Join(record.Dir(d.PodStateDir, name), "pod.json"), []byte("{"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fams = scrape(t, api)
	for phase, want := range map[string]float64{"Pending": 0, "Running": 1, "Succeeded": 1, "Failed": 0} {
		if got := sample(t, fams, "unitrun_pods", "phase="+phase); got != want {
			t.Errorf("with two broken pods: unitrun_pods{phase=%s} = %v, want %v", phase, got, want)
		}
	}
	if got := sample(t, fams, "unitrun_pods_unreadable"); got != 2 {
		t.Errorf("unitrun_pods_unreadable = %v, want 2", got)
	}
	if got := sample(t, fams, "unitrun_live_jobs"); got != 0 {
		t.Errorf("unitrun_live_jobs = %v, want 0", got)
	}

	// A pod state dir that cannot be listed leaves both pod metrics out,
	// not the others.
	if err := os.RemoveAll(filepath.Join(d.PodStateDir, "pods")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d.PodStateDir, "pods"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fams = scrape(t, api)
	for _, name := range []string{"unitrun_pods", "unitrun_pods_unreadable"} {
		if _, ok := fams[name]; ok {
			t.Errorf("%s served from a pod state dir that cannot be listed: %v", name, fams[name])
		}
	}
	if got := sample(t, fams, "unitrun_live_jobs"); got != 0 {
		t.Errorf("unitrun_live_jobs = %v, want 0", got)
	}
}
