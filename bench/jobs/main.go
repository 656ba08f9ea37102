// Command jobs measures job throughput on one manager: N `true` jobs through
// the unitrun library, sequentially and concurrently, against the floor, a
// bare go-systemd StartTransientUnit round trip (oneshot /bin/true, wait for
// JobRemoved, read ExecMainStatus) with nothing else. bench/run.sh runs it
// beside systemd-run on the same manager and prints the ratios.
//
// Usage: jobs -manager private:PATH -n 200 -concurrency 8 MODE...
// where MODE is lib-seq, lib-par, floor-seq or floor-par, each printing
// "MODE jobs/s", or lib-echo, concurrently the job that bench/load.sh has
// the daemon run (/bin/echo 7, its output read and checked), or fill,
// which loads the manager with n more units (each
// a oneshot /bin/true with RemainAfterExit=yes, so that it stays loaded
// and active, as a busy host's units do), concurrency at a time, and
// prints "fill units/s", or start10, the floor of "pod run --detach" of a
// pod of 10 apps as bench/pods.sh measures it: 10 "sleep 600" units
// started at once with job.Command until every Start returned (then
// stopped), n times, printing "start10 ms" per round, or dial, the
// connection set-up of one "unitrun run" process: a new connection to the
// manager (manager.Open) and, where units are kept for the caller over a
// bus of their own, that bus's (CanRef), closed again, n times, printing
// "dial ms" per connection.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/manager"
)

func main() {
	spec := flag.String("manager", "", "manager (as unitrun --manager)")
	n := flag.Int("n", 200, "jobs per mode")
	par := flag.Int("concurrency", 8, "jobs in flight in the concurrent modes")
	flag.Parse()
	ctx := context.Background()
	mgr, err := manager.Open(ctx, *spec, manager.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer mgr.Close()
	for _, mode := range flag.Args() {
		var f func() error
		var workers int
		switch mode {
		case "lib-seq", "lib-par":
			f = func() error { return job.Command(mgr, "/bin/true").Run() }
		case "lib-echo":
			f = func() error { return echo(mgr) }
		case "floor-seq", "floor-par", "fill":
			fl, err := newFloor(mgr.Target())
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			defer fl.conn.Close()
			f = fl.run
			if mode == "fill" {
				f = fl.fill
			}
		case "start10", "dial":
			round := start10
			if mode == "dial" {
				round = func(*manager.Conn) (time.Duration, error) { return dial(*spec) }
			}
			var total time.Duration
			for range *n {
				d, err := round(mgr)
				if err != nil {
					fmt.Fprintf(os.Stderr, "%s: %v\n", mode, err)
					os.Exit(1)
				}
				total += d
			}
			fmt.Printf("%s %.1f\n", mode, float64(total.Microseconds())/1e3/float64(*n))
			continue
		default:
			fmt.Fprintf(os.Stderr, "unknown mode %q\n", mode)
			os.Exit(2)
		}
		workers = 1
		if mode == "lib-par" || mode == "floor-par" || mode == "fill" || mode == "lib-echo" {
			workers = *par
		}
		rate, err := measure(*n, workers, f)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", mode, err)
			os.Exit(1)
		}
		fmt.Printf("%s %.1f\n", mode, rate)
	}
}

// measure runs f n times on workers goroutines and returns runs per second.
func measure(n, workers int, f func() error) (float64, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				if err := f(); err != nil {
					mu.Lock()
					first = err
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds(), first
}

// echo runs the daemon's op of bench/load.sh through the library and
// checks its output.
func echo(mgr *manager.Conn) error {
	var out bytes.Buffer
	c := job.Command(mgr, "/bin/echo", "7")
	c.Stdout = &out
	if err := c.Run(); err != nil {
		return err
	}
	if out.String() != "7\n" {
		return fmt.Errorf("echo: output %q, want \"7\\n\"", out.String())
	}
	return nil
}

// start10 starts 10 "sleep 600" units at once, waits until every Start
// returned, then stops them, and returns how long the starts took.
func start10(mgr *manager.Conn) (time.Duration, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmds := make([]*job.Cmd, 10)
	errs := make([]error, len(cmds))
	var wg sync.WaitGroup
	start := time.Now()
	for i := range cmds {
		cmds[i] = job.CommandContext(ctx, mgr, "/bin/sleep", "600")
		wg.Go(func() { errs[i] = cmds[i].Start() })
	}
	wg.Wait()
	d := time.Since(start)
	cancel()
	for i, c := range cmds {
		if errs[i] == nil {
			c.Wait()
		}
	}
	return d, errors.Join(errs...)
}

// floor is the bare go-systemd round trip.
type floor struct {
	conn *sddbus.Conn
	seq  atomic.Int64
}

func newFloor(t manager.Target) (*floor, error) {
	c, err := sddbus.NewConnection(func() (*dbus.Conn, error) {
		conn, err := dbus.Dial(t.Address)
		if err != nil {
			return nil, err
		}
		if err := conn.Auth([]dbus.Auth{dbus.AuthExternal(strconv.Itoa(os.Getuid()))}); err != nil {
			conn.Close()
			return nil, err
		}
		if !t.Peer {
			if err := conn.Hello(); err != nil {
				conn.Close()
				return nil, err
			}
		}
		return conn, nil
	})
	if err != nil {
		return nil, err
	}
	if err := c.Subscribe(); err != nil {
		c.Close()
		return nil, err
	}
	return &floor{conn: c}, nil
}

func (f *floor) run() error {
	ctx := context.Background()
	name := fmt.Sprintf("unitrun-floor-%d-%d.service", os.Getpid(), f.seq.Add(1))
	ch := make(chan string, 1)
	props := []sddbus.Property{
		sddbus.PropExecStart([]string{"/bin/true"}, false),
		{Name: "Type", Value: dbus.MakeVariant("oneshot")},
	}
	if _, err := f.conn.StartTransientUnitContext(ctx, name, "fail", props, ch); err != nil {
		return err
	}
	if r := <-ch; r != "done" {
		return fmt.Errorf("%s: job %s", name, r)
	}
	_, err := f.conn.GetServicePropertyContext(ctx, name, "ExecMainStatus")
	return err
}

// fill starts one more unit that stays loaded and active.
func (f *floor) fill() error {
	name := fmt.Sprintf("unitrun-fill-%d-%d.service", os.Getpid(), f.seq.Add(1))
	ch := make(chan string, 1)
	props := []sddbus.Property{
		sddbus.PropExecStart([]string{"/bin/true"}, false),
		{Name: "Type", Value: dbus.MakeVariant("oneshot")},
		{Name: "RemainAfterExit", Value: dbus.MakeVariant(true)},
	}
	if _, err := f.conn.StartTransientUnitContext(context.Background(), name, "fail", props, ch); err != nil {
		return err
	}
	if r := <-ch; r != "done" {
		return fmt.Errorf("%s: job %s", name, r)
	}
	return nil
}

// dial times one connection set-up of a unitrun process on the manager
// that spec names, closing it again.
func dial(spec string) (time.Duration, error) {
	ctx := context.Background()
	start := time.Now()
	mgr, err := manager.Open(ctx, spec, manager.Options{})
	if err != nil {
		return 0, err
	}
	mgr.CanRef(ctx)
	d := time.Since(start)
	return d, mgr.Close()
}
