// Command store measures the host API daemon's record store against
// bbolt, in one run, on the file system of -dir:
//
//   - v2: package hostapi/store as the daemon uses it (one append-only
//     record log for all jobs with group commit, indexed in memory,
//     compacted at prune, an output log per job);
//   - bbolt: the records and started marks in one bbolt file
//     (go.etcd.io/bbolt, containerd's choice), an output log per job.
//
// Each keeps the same promise: a record is durable (fdatasync, or bbolt's
// commit) before the call that stored it returns; a started mark need not
// be. A job does what the daemon does for a call of an exec op: its
// running record (durable before the caller hears of the job), its output
// log opened, written and closed, its started mark, a stored attempt, a read by id,
// the output's tail and its final record; every fifth job
// prunes the store to 50 finished records, as a daemon with records_keep
// = 50 does in its steady state. Jobs run one at a time and 200 at once.
// Reads by id and pages of 100 of a store of 1,000 records are measured
// apart. Within a round the designs run each measure back to back, in
// an order that turns from round to round; the table gives each one's
// median over the rounds and the median of its ratio to v2's in the
// same round.
//
// This is a module of its own so that bbolt stays out of unitrun's.
//
//	cd bench/store && go run . -dir /var/tmp -rounds 5 -jobs 200
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/unitrun/unitrun/hostapi/store"
)

// A design is one way to keep the records, as the daemon calls it.
type design interface {
	newID() string
	create(r *store.Record) error // the first record, durable
	markStarted(id string) error  // need not be durable
	put(r *store.Record) error    // a later version, durable
	openOutput(id string) (*os.File, error)
	tail(id string, n int) (string, error)
	get(id string) (*store.Record, error)
	page(limit int) (int, error)
	prune(keep int) error
	close() error
}

var designs = []struct {
	name string
	open func(dir string) (design, error)
}{
	{"v2", openV2},
	{"bbolt", openBolt},
}

const keep = 50 // records_keep of the daemon measured

func main() {
	dir := flag.String("dir", os.TempDir(), "where the stores are made: the file system measured")
	rounds := flag.Int("rounds", 5, "rounds; within each, the designs run each measure back to back")
	jobs := flag.Int("jobs", 200, "jobs per measurement")
	flag.Parse()

	measures := []string{"job, 1 at a time", "job, 200 at once", "read by id", "page of 100 (of 1,000)"}
	// times[m][d] and ratios[m][d]: per round, µs and the time over
	// v2's in the same round (paired, so that the machine's drift
	// from one round to the next cancels out).
	times := make([][][]float64, len(measures))
	ratios := make([][][]float64, len(measures))
	for m := range measures {
		times[m] = make([][]float64, len(designs))
		ratios[m] = make([][]float64, len(designs))
	}
	for round := range *rounds {
		for m, name := range measures {
			us := make([]float64, len(designs))
			for i := range designs {
				d := (i + round) % len(designs)
				var err error
				if us[d], err = measure(designs[d].open, *dir, m, *jobs); err != nil {
					fmt.Fprintf(os.Stderr, "%s: %s: %v\n", designs[d].name, name, err)
					os.Exit(1)
				}
			}
			for d := range designs {
				times[m][d] = append(times[m][d], us[d])
				ratios[m][d] = append(ratios[m][d], us[d]/us[0])
			}
		}
	}
	fmt.Printf("state on %s, %d rounds of %d jobs (reads: 10x as many); µs per job or read, median (range); x v2: the median of each round's ratio to v2's\n\n", *dir, *rounds, *jobs)
	fmt.Printf("| measure |")
	for _, d := range designs {
		fmt.Printf(" %s |", d.name)
	}
	fmt.Printf("\n| --- |%s\n", strings.Repeat(" ---: |", len(designs)))
	for m, name := range measures {
		fmt.Printf("| %s |", name)
		for d := range designs {
			t, r := times[m][d], ratios[m][d]
			fmt.Printf(" %.1f (%.1f to %.1f), %.2fx v2 (%.2f to %.2f) |", median(t), slices.Min(t), slices.Max(t), median(r), slices.Min(r), slices.Max(r))
		}
		fmt.Println()
	}
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

// measure makes a store of the design in a new directory under dir and
// returns the µs per job or read of measure number m.
func measure(open func(string) (design, error), dir string, m, jobs int) (float64, error) {
	tmp, err := os.MkdirTemp(dir, "storebench-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	d, err := open(tmp)
	if err != nil {
		return 0, err
	}
	defer d.close()
	switch m {
	case 0, 1:
		// The steady state: a store that has pruned, as a daemon that
		// has run for a while.
		if err := runJobs(d, keep+5, 1); err != nil {
			return 0, err
		}
		if err := d.prune(keep); err != nil {
			return 0, err
		}
		par := 1
		if m == 1 {
			par = 200
		}
		start := time.Now()
		if err := runJobs(d, jobs, par); err != nil {
			return 0, err
		}
		return float64(time.Since(start).Nanoseconds()) / 1e3 / float64(jobs), nil
	case 2:
		r, err := finished(d, time.Now())
		if err != nil {
			return 0, err
		}
		start := time.Now()
		for range jobs * 10 {
			if _, err := d.get(r.ID); err != nil {
				return 0, err
			}
		}
		return float64(time.Since(start).Nanoseconds()) / 1e3 / float64(jobs*10), nil
	default:
		t0 := time.Now().Add(-time.Hour)
		for i := range 1000 {
			if _, err := finished(d, t0.Add(time.Duration(i)*time.Millisecond)); err != nil {
				return 0, err
			}
		}
		if _, err := d.page(100); err != nil { // the first listing loads an index
			return 0, err
		}
		start := time.Now()
		for range jobs {
			if n, err := d.page(100); err != nil || n != 100 {
				return 0, fmt.Errorf("page: %d records, %v", n, err)
			}
		}
		return float64(time.Since(start).Nanoseconds()) / 1e3 / float64(jobs), nil
	}
}

// finished stores the final record of a job made at created, with no
// other step.
func finished(d design, created time.Time) (*store.Record, error) {
	code := 0
	r := &store.Record{ID: d.newID(), Op: "true", Args: []string{"a"}, State: "succeeded", Unit: "u.service",
		ExitCode: &code, Result: "success", CreatedAt: created, FinishedAt: &created, OutputTail: "hello\n"}
	return r, d.create(r)
}

// runJobs runs n jobs, par at once; every fifth job prunes.
func runJobs(d design, n, par int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, par)
	for range par {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				if err := runJob(d, int(i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

var output = []byte(strings.Repeat("output of the job's command\n", 4))

// runJob stores one job as the daemon does for a call of an exec op.
func runJob(d design, i int) error {
	id := d.newID()
	now := time.Now().UTC()
	r := &store.Record{ID: id, Op: "true", Args: []string{"a", "b"}, State: "running",
		Unit: "unitrun-op-true-" + strings.ToLower(id) + ".service", CallerUID: 1000, CallerPID: 4242,
		CreatedAt: now, StartedAt: &now, BootID: "0123456789abcdef0123456789abcdef"}
	if err := d.create(r); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	f, err := d.openOutput(id)
	if err != nil {
		return fmt.Errorf("output: %w", err)
	}
	_, err = f.Write(output)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("output: %w", err)
	}
	if err := d.markStarted(id); err != nil {
		return fmt.Errorf("mark: %w", err)
	}
	r.Attempts = 1
	if err := d.put(r); err != nil {
		return fmt.Errorf("attempt: %w", err)
	}
	// A status query, read while the job runs: once it has ended, a
	// concurrent prune may remove it.
	if got, err := d.get(id); err != nil || got.State != "running" || got.Attempts != 1 {
		return fmt.Errorf("get: %+v, %v", got, err)
	}
	tail, err := d.tail(id, 4096)
	if err != nil {
		return fmt.Errorf("tail: %w", err)
	}
	code, end := 0, time.Now().UTC()
	r.State, r.ExitCode, r.Result, r.FinishedAt, r.OutputTail = "succeeded", &code, "success", &end, tail
	if err := d.put(r); err != nil {
		return fmt.Errorf("final: %w", err)
	}
	if tail != string(output) {
		return fmt.Errorf("tail %q, want %q", tail, output)
	}
	if i%5 == 0 {
		return d.prune(keep)
	}
	return nil
}
