// Command load puts a running unitrun daemon under load: CALLERS callers,
// half over its HTTP socket and half over its SEQPACKET socket, each
// calling the op "echo" (argv: echo "$1") with an arg of its own, waiting
// for the job and checking the answer, for DURATION. It prints calls,
// wrong answers, jobs/s and p50/p99 latency per front end, and the
// daemon's RSS, open fds and threads before the load and after it (once
// SETTLE has passed). bench/load.sh and bench/soak.sh run it.
//
// Usage: load -api SOCK -argv SOCK -pid PID [-callers 200] [-duration 10s]
// [-settle 3s] [-leak-check]. With -leak-check it exits 1 when any call got
// a wrong answer, the fds grew by more than 5 or the RSS by more than
// -max-rss-growth MiB.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/unitrun/unitrun/hostapi"
)

func main() {
	api := flag.String("api", "", "the daemon's HTTP socket")
	argv := flag.String("argv", "", "the daemon's SEQPACKET socket")
	pid := flag.Int("pid", 0, "the daemon's pid, for its RSS, fds and threads")
	callers := flag.Int("callers", 200, "concurrent callers, half on each front end")
	duration := flag.Duration("duration", 10*time.Second, "how long the callers call")
	settle := flag.Duration("settle", 3*time.Second, "wait after the load before reading the daemon's figures")
	leakCheck := flag.Bool("leak-check", false, "exit 1 on a wrong answer or fds/RSS growth")
	maxRSS := flag.Int("max-rss-growth", 64, "RSS growth in MiB that -leak-check allows")
	flag.Parse()
	if *api == "" || *argv == "" || *pid == 0 {
		fmt.Fprintln(os.Stderr, "load: -api, -argv and -pid are required")
		os.Exit(2)
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *callers,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", *api)
		}}}
	before := read(*pid)
	fronts := []*front{{name: "http", call: func(tag string) error { return httpCall(hc, tag) }},
		{name: "seqpacket", call: func(tag string) error { return seqCall(*argv, tag) }}}
	start := time.Now()
	end := start.Add(*duration)
	var wg sync.WaitGroup
	for c := range *callers {
		f := fronts[c%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; time.Now().Before(end); n++ {
				t0 := time.Now()
				err := f.call(strconv.Itoa(c*1_000_000 + n))
				f.record(time.Since(t0), err)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	hc.CloseIdleConnections()
	time.Sleep(*settle)
	after := read(*pid)

	fmt.Printf("%d callers (%d HTTP, %d SEQPACKET) for %v, %d cores\n", *callers, (*callers+1)/2, *callers/2, *duration, runtime.NumCPU())
	fmt.Printf("%-10s %8s %7s %8s %8s %8s\n", "front", "calls", "wrong", "jobs/s", "p50 ms", "p99 ms")
	var all front
	all.name = "total"
	for _, f := range fronts {
		f.print(elapsed)
		all.lat = append(all.lat, f.lat...)
		all.wrong += f.wrong
	}
	all.print(elapsed)
	fmt.Printf("%-10s %10s %6s %8s\n", "daemon", "RSS KiB", "fds", "threads")
	fmt.Printf("%-10s %10d %6d %8d\n", "before", before.rss, before.fds, before.threads)
	fmt.Printf("%-10s %10d %6d %8d\n", "after", after.rss, after.fds, after.threads)
	for _, f := range fronts {
		if f.firstErr != nil {
			fmt.Printf("first wrong answer on %s: %v\n", f.name, f.firstErr)
		}
	}
	if *leakCheck {
		ok := all.wrong == 0 && after.fds <= before.fds+5 && after.rss <= before.rss+*maxRSS<<10
		fmt.Printf("leak check (no wrong answer, fds within +5, RSS within +%d MiB): %v\n", *maxRSS, map[bool]string{true: "pass", false: "FAIL"}[ok])
		if !ok {
			os.Exit(1)
		}
	}
}

// front is one front end's calls and what they measured.
type front struct {
	name     string
	call     func(tag string) error
	mu       sync.Mutex
	lat      []time.Duration
	wrong    int
	firstErr error
}

func (f *front) record(d time.Duration, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		f.wrong++
		if f.firstErr == nil {
			f.firstErr = err
		}
		return
	}
	f.lat = append(f.lat, d)
}

func (f *front) print(elapsed time.Duration) {
	slices.Sort(f.lat)
	pct := func(p float64) float64 {
		if len(f.lat) == 0 {
			return 0
		}
		return float64(f.lat[int(p*float64(len(f.lat)-1))].Microseconds()) / 1000
	}
	fmt.Printf("%-10s %8d %7d %8.1f %8.1f %8.1f\n", f.name, len(f.lat)+f.wrong, f.wrong,
		float64(len(f.lat))/elapsed.Seconds(), pct(0.5), pct(0.99))
}

// httpCall calls echo over HTTP, waiting, and checks the record.
func httpCall(hc *http.Client, tag string) error {
	resp, err := hc.Post("http://unitrun/v1/ops/echo", "application/json", strings.NewReader(`{"args": ["`+tag+`"], "wait": true}`))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var rec hostapi.Record
	switch err := json.NewDecoder(resp.Body).Decode(&rec); {
	case err != nil:
		return fmt.Errorf("%s: %v", resp.Status, err)
	case rec.State != hostapi.StateSucceeded, rec.OutputTail != tag+"\n":
		return fmt.Errorf("%s: job %s %s, output %q: want succeeded with %q", resp.Status, rec.ID, rec.State, rec.OutputTail, tag+"\n")
	}
	return nil
}

// seqCall calls echo over SEQPACKET and checks the response.
func seqCall(sock, tag string) error {
	c, err := net.Dial("unixpacket", sock)
	if err != nil {
		return err
	}
	defer c.Close()
	pkt, _ := hostapi.EncodeRequest("echo", []string{tag})
	if _, err := c.Write(pkt); err != nil {
		return err
	}
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	if err != nil {
		return err
	}
	ok, id, msg, err := hostapi.ParseResponse(buf[:n])
	if err != nil || !ok || id == "" {
		return fmt.Errorf("response %v %q %q (%v)", ok, id, msg, err)
	}
	return nil
}

// stats is what /proc says of the daemon.
type stats struct{ rss, fds, threads int }

func read(pid int) stats {
	var s stats
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	fields := map[string]*int{"VmRSS:": &s.rss, "Threads:": &s.threads}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && fields[f[0]] != nil {
			*fields[f[0]], _ = strconv.Atoi(f[1])
		}
	}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	s.fds = len(fds)
	return s
}
