package scheduler

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/unitrun/unitrun/hostapi/config"
	"github.com/unitrun/unitrun/hostapi/front"
	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/job"
)

// benchRecordsKeep is the records_keep of the benchmarks' daemon.
const benchRecordsKeep = 50

// benchDaemon serves a daemon with a "true" op and returns an HTTP client
// of it.
func benchDaemon(b *testing.B) (*Scheduler, *http.Client) {
	b.Helper()
	dir := b.TempDir()
	cfgFile := filepath.Join(dir, "daemon.toml")
	os.WriteFile(cfgFile, []byte(fmt.Sprintf("[[op]]\nname = \"true\"\nexec = [\"/bin/true\"]\n[limits]\nrecords_keep = %d\n", benchRecordsKeep)), 0o600)
	cfg, err := config.Load(cfgFile, "")
	if err != nil {
		b.Fatal(err)
	}
	store, err := OpenStore(filepath.Join(dir, "state"))
	if err != nil {
		b.Fatal(err)
	}
	d := New(cfg, store, systemdtest.Conn(b))
	d.Log = slog.New(slog.DiscardHandler) // the events would fill the benchmark's output
	sock := filepath.Join(dir, "api.sock")
	l, err := front.ListenUnix("unix", sock, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	srv := front.NewHTTPServer(d)
	go front.NewServer(d, d.Log).ServeHTTP(srv, l)
	b.Cleanup(func() { srv.Close(); d.Close() })
	return d, &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
}

func post(b *testing.B, hc *http.Client, path, body string) string {
	resp, err := hc.Post("http://unitrun"+path, "application/json", strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b.Fatalf("%s: %d %s", path, resp.StatusCode, data)
	}
	return string(data)
}

// BenchmarkOpRoundTrip compares a "true" op called through the daemon's
// HTTP socket, waiting for its outcome, with the same command run by the
// job package directly, its output to a file as the daemon does, with and
// without the pin the daemon's units have (library+pin: the unit the
// daemon runs, and none of the daemon's own work). The daemon is timed in
// its steady state, once it keeps as many records as records_keep allows.
func BenchmarkOpRoundTrip(b *testing.B) {
	b.Run("daemon", func(b *testing.B) {
		d, hc := benchDaemon(b)
		// A daemon that has run for a while: it keeps records_keep
		// records, and prunes one for each new job.
		for range benchRecordsKeep + benchRecordsKeep/10 {
			post(b, hc, "/v1/ops/true", `{"wait": true}`)
		}
		if err := d.Prune(); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		c0 := machineCPU(b)
		for range b.N {
			if out := post(b, hc, "/v1/ops/true", `{"wait": true}`); !strings.Contains(out, `"state":"succeeded"`) {
				b.Fatal(out)
			}
		}
		reportMachineCPU(b, c0)
	})
	for _, pin := range []bool{false, true} {
		name := "library"
		if pin {
			name = "library+pin"
		}
		b.Run(name, func(b *testing.B) {
			mgr := systemdtest.Conn(b)
			out, err := os.Create(filepath.Join(b.TempDir(), "out"))
			if err != nil {
				b.Fatal(err)
			}
			defer out.Close()
			b.ResetTimer()
			c0 := machineCPU(b)
			for range b.N {
				c := job.Command(mgr, "/bin/true")
				c.Stdout, c.Stderr = out, out
				c.Pin = pin
				if err := c.Run(); err != nil {
					b.Fatal(err)
				}
			}
			reportMachineCPU(b, c0)
		})
	}
}

// machineCPU returns the CPU time every process of the machine has used
// since it booted (user, nice, system, irq and softirq time in the cpu line
// of /proc/stat).
func machineCPU(b *testing.B) time.Duration {
	b.Helper()
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Fatal(err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq ...
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7} {
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			b.Fatalf("/proc/stat: %q: %v", line, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ is 100
}

// reportMachineCPU reports the machine's CPU time per op since c0 (a
// machineCPU reading) as "machine-ms/op": what a call costs every process
// it involves (the manager, the op), a steadier
// measure than the time per op on a shared machine of two cores.
func reportMachineCPU(b *testing.B, c0 time.Duration) {
	b.ReportMetric(float64(machineCPU(b)-c0)/float64(time.Millisecond)/float64(b.N), "machine-ms/op")
}

// BenchmarkStatusQuery measures GET /v1/jobs/{id} of a finished job, from
// parallel clients.
func BenchmarkStatusQuery(b *testing.B) {
	d, hc := benchDaemon(b)
	rec, err := d.Call(context.Background(), root, "true", nil)
	if err != nil {
		b.Fatal(err)
	}
	d.Wait(context.Background(), rec.ID)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := hc.Get("http://unitrun/v1/jobs/" + rec.ID)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
}

// BenchmarkDaemonIdleRSS starts the unitrun daemon binary, calls it b.N
// times and reports its resident memory once idle: a second after the
// last job ended (idleFree) and a second more.
func BenchmarkDaemonIdleRSS(b *testing.B) {
	dir := b.TempDir()
	cfg := filepath.Join(dir, "daemon.toml")
	os.WriteFile(cfg, []byte("[[op]]\nname = \"true\"\nexec = [\"/bin/true\"]\n"), 0o600)
	sock := filepath.Join(dir, "api.sock")
	cmd := exec.Command(systemdtest.Binary(b), "daemon", "--config", cfg, "--ops-dir", filepath.Join(dir, "ops.d"),
		"--state-dir", filepath.Join(dir, "state"), "--socket", sock, "--seqpacket", filepath.Join(dir, "argv.sock"))
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	for {
		if resp, err := hc.Get("http://unitrun/healthz"); err == nil {
			resp.Body.Close()
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for range b.N {
		post(b, hc, "/v1/ops/true", `{"wait": true}`)
	}
	time.Sleep(idleFree + time.Second)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	var kb float64
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			fmt.Sscan(v, &kb)
		}
	}
	b.ReportMetric(kb/1024, "MB-rss")
}
