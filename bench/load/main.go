// Command load puts a running unitrun daemon under load: CALLERS callers,
// half over its HTTP socket and half over its SEQPACKET socket (or, with
// -front http or -front seqpacket, all over one), each
// calling the op "echo" (argv: /bin/echo ARG) with an arg of its own, waiting
// for the job and checking the answer, for DURATION. It prints calls,
// wrong answers, jobs/s and p50/p99 latency per front end, and the
// daemon's RSS, open fds and threads before the load and after it (once
// SETTLE has passed). bench/load.sh and bench/soak.sh run it.
//
// Usage: load -api SOCK -argv SOCK -pid PID [-callers 200] [-duration 10s] [-front both]
// [-settle 3s] [-leak-check] [-faults -answers FILE]. With -leak-check it
// exits 1 when any call got a wrong answer, the fds grew by more than 5 or
// the RSS by more than -max-rss-growth MiB. With -pidfile the daemon's pid
// is read from a file at each look, for a daemon restarted meanwhile.
//
// With -faults, for a daemon killed or stopped during the load, an HTTP
// call carries an idempotency key ("load-" and its arg) and is made again
// until it is answered, and a SEQPACKET call whose connection breaks is
// counted as lost, not wrong (a call that cannot connect waits for the
// daemon to be back). -answers writes "arg job-id" for each call
// answered; "load -check-state DIR -answers FILE", run once the daemon has
// stopped, then reads every job record in the state dir and prints the
// records duplicated (two jobs of one arg), wrong (not succeeded with the
// arg as output) and missing (an answered job with no record), and exits 1
// if there is any.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/scheduler"
)

// options are load's flags.
type options struct {
	api, argv           string
	pid, callers        int
	duration, settle    time.Duration
	leakCheck           bool
	maxRSS              int
	pidFile             string
	faults              bool
	answers, checkState string
	follow              int
	front               string
}

func main() {
	o := parseFlags()
	if o.checkState != "" {
		os.Exit(check(o.checkState, o.answers))
	}
	o.readPID()
	if o.api == "" || o.argv == "" || o.pid == 0 {
		fmt.Fprintln(os.Stderr, "load: -api, -argv and -pid (or -pidfile) are required")
		os.Exit(2)
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.callers,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", o.api)
		}}}
	before := read(hc, o.pid)
	if o.follow > 0 {
		os.Exit(followLog(hc, o.pid, o.follow, o.settle, before))
	}
	var fronts []*front
	if o.front != "seqpacket" {
		fronts = append(fronts, &front{name: "http", call: func(tag string) (string, error) { return httpCall(hc, tag, o.faults) }})
	}
	if o.front != "http" {
		fronts = append(fronts, &front{name: "seqpacket", call: func(tag string) (string, error) { return seqCall(o.argv, tag) }})
	}
	out, elapsed := callAll(o, fronts)
	hc.CloseIdleConnections()
	time.Sleep(o.settle)
	o.readPID()
	after := read(hc, o.pid)
	if o.answers != "" {
		if err := os.WriteFile(o.answers, []byte(out.b.String()), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, "load:", err)
			os.Exit(1)
		}
	}
	os.Exit(report(o, fronts, elapsed, before, after))
}

// parseFlags returns the options the command line sets.
func parseFlags() *options {
	o := &options{}
	flag.StringVar(&o.api, "api", "", "the daemon's HTTP socket")
	flag.StringVar(&o.argv, "argv", "", "the daemon's SEQPACKET socket")
	flag.IntVar(&o.pid, "pid", 0, "the daemon's pid, for its RSS, fds and threads")
	flag.IntVar(&o.callers, "callers", 200, "concurrent callers, half on each front end")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "how long the callers call")
	flag.DurationVar(&o.settle, "settle", 3*time.Second, "wait after the load before reading the daemon's figures")
	flag.BoolVar(&o.leakCheck, "leak-check", false, "exit 1 on a wrong answer or fds/RSS growth")
	flag.IntVar(&o.maxRSS, "max-rss-growth", 64, "RSS growth in MiB that -leak-check allows")
	flag.StringVar(&o.pidFile, "pidfile", "", "a file that holds the daemon's pid (instead of -pid)")
	flag.BoolVar(&o.faults, "faults", false, "the daemon is killed or stopped meanwhile: HTTP calls carry a key and are made again until answered, broken SEQPACKET calls are counted as lost")
	flag.StringVar(&o.answers, "answers", "", "write \"arg job-id\" of each answered call to this file")
	flag.StringVar(&o.checkState, "check-state", "", "check the records in this state dir against -answers, and exit")
	flag.IntVar(&o.follow, "follow", 0, "instead of the load: this many callers follow the log of one job of the op \"lines\" and check every byte")
	flag.StringVar(&o.front, "front", "both", "the front ends called: both (half the callers on each), http or seqpacket")
	flag.Parse()
	if o.front != "both" && o.front != "http" && o.front != "seqpacket" {
		fmt.Fprintln(os.Stderr, "load: -front must be both, http or seqpacket")
		os.Exit(2)
	}
	return o
}

// readPID reads the daemon's pid from -pidfile, if it is set.
func (o *options) readPID() {
	if o.pidFile != "" {
		b, _ := os.ReadFile(o.pidFile)
		o.pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
}

// callAll has o.callers callers, spread over fronts, call until
// o.duration has passed, and returns the calls answered and how long
// the callers took.
func callAll(o *options, fronts []*front) (*answered, time.Duration) {
	var out answered
	start := time.Now()
	end := start.Add(o.duration)
	var wg sync.WaitGroup
	for c := range o.callers {
		f := fronts[c%len(fronts)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; time.Now().Before(end); n++ {
				t0 := time.Now()
				tag := strconv.Itoa(c*1_000_000 + n)
				id, err := f.call(tag)
				var broken *brokenError
				if o.faults && errors.As(err, &broken) {
					f.lose()
					continue
				}
				f.record(time.Since(t0), err)
				if err == nil {
					out.add(tag, id)
				}
			}
		}()
	}
	wg.Wait()
	return &out, time.Since(start)
}

// report prints what fronts measured and the daemon's figures before and
// after, and returns the exit status: 1 when -leak-check fails.
func report(o *options, fronts []*front, elapsed time.Duration, before, after stats) int {
	fmt.Printf("%d callers (%s) for %v, %d cores\n", o.callers, o.front, o.duration, runtime.NumCPU())
	fmt.Printf("%-10s %8s %7s %8s %8s %8s\n", "front", "calls", "wrong", "jobs/s", "p50 ms", "p99 ms")
	var all front
	all.name = "total"
	for _, f := range fronts {
		f.print(elapsed)
		all.lat = append(all.lat, f.lat...)
		all.wrong += f.wrong
	}
	all.print(elapsed)
	printStats(before, after)
	for _, f := range fronts {
		if f.lost > 0 {
			fmt.Printf("%s calls whose connection broke (answer lost): %d\n", f.name, f.lost)
		}
	}
	for _, f := range fronts {
		if f.firstErr != nil {
			fmt.Printf("first wrong answer on %s: %v\n", f.name, f.firstErr)
		}
	}
	if !o.leakCheck {
		return 0
	}
	ok := all.wrong == 0 && after.fds <= before.fds+5 && after.rss <= before.rss+o.maxRSS<<10
	fmt.Printf("leak check (no wrong answer, fds within +5, RSS within +%d MiB): %v\n", o.maxRSS, map[bool]string{true: "pass", false: "FAIL"}[ok])
	if !ok {
		return 1
	}
	return 0
}

// front is one front end's calls and what they measured.
type front struct {
	name     string
	call     func(tag string) (id string, err error)
	mu       sync.Mutex
	lat      []time.Duration
	wrong    int
	lost     int
	firstErr error
}

func (f *front) lose() {
	f.mu.Lock()
	f.lost++
	f.mu.Unlock()
}

// answered collects "arg job-id" lines of the calls answered.
type answered struct {
	mu sync.Mutex
	b  strings.Builder
}

func (a *answered) add(tag, id string) {
	a.mu.Lock()
	fmt.Fprintf(&a.b, "%s %s\n", tag, id)
	a.mu.Unlock()
}

// brokenError is a call whose connection broke before it was answered.
type brokenError struct{ err error }

func (e *brokenError) Error() string { return "connection broke: " + e.err.Error() }

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

// httpCall calls echo over HTTP, waiting, checks the record and returns
// its job id. With keyed, the call carries a key and is made again while
// the daemon cannot be reached or breaks the connection, for up to 2
// minutes.
func httpCall(hc *http.Client, tag string, keyed bool) (string, error) {
	body := `{"args": ["` + tag + `"], "wait": true}`
	if keyed {
		body = `{"args": ["` + tag + `"], "wait": true, "key": "load-` + tag + `"}`
	}
	for give := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		id, err := httpOnce(hc, body, tag)
		var broken *brokenError
		if !keyed || !errors.As(err, &broken) || time.Now().After(give) {
			return id, err
		}
	}
}

// httpOnce makes one HTTP call; a call whose connection breaks before the
// record is read is a *brokenError.
func httpOnce(hc *http.Client, body, tag string) (string, error) {
	resp, err := hc.Post("http://unitrun/v1/ops/echo", "application/json", strings.NewReader(body))
	if err != nil {
		return "", &brokenError{err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", &brokenError{err}
	}
	var rec api.Record
	switch err := json.Unmarshal(data, &rec); {
	case err != nil:
		return "", fmt.Errorf("%s: %v", resp.Status, err)
	case rec.State != api.StateSucceeded, rec.OutputTail != tag+"\n":
		return "", fmt.Errorf("%s: job %s %s, output %q: want succeeded with %q", resp.Status, rec.ID, rec.State, rec.OutputTail, tag+"\n")
	}
	return rec.ID, nil
}

// seqCall calls echo over SEQPACKET, checks the response and returns the
// job id; a call whose connection breaks before the answer is a
// *brokenError. While the socket refuses connections (the daemon is
// down), it tries again every 50 ms for up to 2 minutes: nothing was sent.
func seqCall(sock, tag string) (string, error) {
	c, err := net.Dial("unixpacket", sock)
	for give := time.Now().Add(2 * time.Minute); err != nil && time.Now().Before(give); {
		time.Sleep(50 * time.Millisecond)
		c, err = net.Dial("unixpacket", sock)
	}
	if err != nil {
		return "", err
	}
	defer c.Close()
	pkt, _ := api.EncodeRequest("echo", []string{tag})
	if _, err := c.Write(pkt); err != nil {
		return "", &brokenError{err}
	}
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	if err != nil || n == 0 {
		return "", &brokenError{fmt.Errorf("read %d bytes: %v", n, err)}
	}
	ok, id, msg, err := api.ParseResponse(buf[:n])
	if err != nil || !ok || id == "" {
		return "", fmt.Errorf("response %v %q %q (%v)", ok, id, msg, err)
	}
	return id, nil
}

// check reads every job record in the state dir and the answers file and
// prints the records duplicated, wrong and missing; it returns the exit
// status: 1 if there is any.
func check(stateDir, answersFile string) int {
	store, err := scheduler.OpenStore(stateDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		return 1
	}
	recs, err := store.List()
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		return 1
	}
	byTag, byID := map[string]int{}, map[string]bool{}
	wrong, dup, missing := 0, 0, 0
	for _, r := range recs {
		byID[r.ID] = true
		if len(r.Args) != 1 {
			continue
		}
		if byTag[r.Args[0]]++; byTag[r.Args[0]] == 2 {
			dup++
		}
		if r.State != api.StateSucceeded || r.OutputTail != r.Args[0]+"\n" {
			wrong++
			fmt.Printf("wrong record: job %s arg %s: %s %q\n", r.ID, r.Args[0], r.State, r.Message)
		}
	}
	data, err := os.ReadFile(answersFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		return 1
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	for _, line := range lines {
		if _, id, ok := strings.Cut(line, " "); ok && !byID[id] {
			missing++
		}
	}
	fmt.Printf("records: %d for %d answered calls; duplicated %d, wrong %d, missing %d\n", len(recs), len(lines), dup, wrong, missing)
	if dup+wrong+missing > 0 {
		return 1
	}
	return 0
}

// followLog starts a job of the op "lines" (300 lines, 10 ms apart) and
// has n callers follow its log over HTTP from the start to its end, each
// checking every byte. It prints the daemon's figures before, once all n
// follow, and after (once settle has passed), and returns the exit
// status: 1 if a follower got other bytes.
func followLog(hc *http.Client, pid, n int, settle time.Duration, before stats) int {
	const lines = 300
	var want strings.Builder
	for i := 1; i <= lines; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	resp, err := hc.Post("http://unitrun/v1/ops/lines", "application/json", strings.NewReader(`{"args": ["`+strconv.Itoa(lines)+`"]}`))
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		return 1
	}
	var rec api.Record
	json.NewDecoder(resp.Body).Decode(&rec)
	resp.Body.Close()
	if rec.ID == "" {
		fmt.Fprintf(os.Stderr, "load: call of lines: %s, no job\n", resp.Status)
		return 1
	}
	start := time.Now()
	var connected sync.WaitGroup
	var wg sync.WaitGroup
	var mu sync.Mutex
	wrong, firstErr := 0, error(nil)
	for range n {
		connected.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := followOnce(hc, rec.ID, want.String(), connected.Done)
			if err != nil {
				mu.Lock()
				wrong++
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		}()
	}
	connected.Wait()
	during := read(hc, pid)
	wg.Wait()
	elapsed := time.Since(start)
	hc.CloseIdleConnections()
	time.Sleep(settle)
	after := read(hc, pid)
	fmt.Printf("%d callers followed the log of job %s (%d lines, %d bytes) to its end in %v: %d got other bytes\n",
		n, rec.ID, lines, want.Len(), elapsed.Round(time.Millisecond), wrong)
	printStats(before, after)
	fmt.Printf("%-10s %10d %6d %8d %11d   (all %d following)\n", "during", during.rss, during.fds, during.threads, during.goroutines, n)
	if firstErr != nil {
		fmt.Println("first wrong follower:", firstErr)
		return 1
	}
	return 0
}

// followOnce follows the job's log to its end, calls connected once the
// daemon has answered, and checks the bytes.
func followOnce(hc *http.Client, id, want string, connected func()) error {
	resp, err := hc.Get("http://unitrun/v1/jobs/" + id + "/logs?follow=1")
	connected()
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || string(got) != want {
		return fmt.Errorf("%s: %d bytes (%v), want %d", resp.Status, len(got), err, len(want))
	}
	return nil
}

// stats is what /proc says of the daemon, and its goroutines (its
// go_goroutines metric).
type stats struct{ rss, fds, threads, goroutines int }

func read(hc *http.Client, pid int) stats {
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
	if resp, err := hc.Get("http://unitrun/metrics"); err == nil {
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "go_goroutines "); ok {
				s.goroutines, _ = strconv.Atoi(v)
			}
		}
	}
	return s
}

// printStats prints the daemon's figures before and after.
func printStats(before, after stats) {
	fmt.Printf("%-10s %10s %6s %8s %11s\n", "daemon", "RSS KiB", "fds", "threads", "goroutines")
	for _, r := range []struct {
		name string
		s    stats
	}{{"before", before}, {"after", after}} {
		fmt.Printf("%-10s %10d %6d %8d %11d\n", r.name, r.s.rss, r.s.fds, r.s.threads, r.s.goroutines)
	}
}
