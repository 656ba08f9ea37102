// Command interleave times short processes against each other: it runs
// each of its command lines once per round, N rounds, in an order shuffled
// anew for each round (so that a machine whose speed drifts slows each
// alike, and none always runs first or after the same one), and prints for each the median
// wall time, the median and mean CPU time (user and system, from the
// kernel's accounting of the child), the mean minor page faults and the
// ratio of its median wall and CPU to those of the first command.
//
// Usage: interleave [-n 30] [-evict] NAME=CMD [NAME=CMD...]
// where CMD is words split at spaces, those before the program of the
// form K=V added to its environment, e.g.
//
//	interleave -n 40 'proto=UNITRUN_MANAGER=user bin/runonly true' 'run=bin/unitrun --manager user run -q -- true'
//
// A command that fails stops it; output is dropped. With -evict, each
// program's file is first dropped from the page cache, so that each is
// read back as an installed binary is: on this project's machine (Linux
// 6.18, ext4) a binary that go build has just written, or one read back
// from the disk, starts 0.4 to 0.7 ms of CPU slower than a copy written by
// cp, whatever its code, so binaries of different histories do not
// compare.
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

type measure struct {
	name      string
	argv, env []string
	wall, cpu []time.Duration
	faults    int64
}

func main() {
	n := flag.Int("n", 30, "rounds")
	evict := flag.Bool("evict", false, "drop each program from the page cache first")
	flag.Parse()
	if flag.NArg() < 1 {
		fmt.Fprintln(os.Stderr, "usage: interleave [-n N] NAME=CMD [NAME=CMD...]")
		os.Exit(2)
	}
	var ms []*measure
	for _, a := range flag.Args() {
		name, line, ok := strings.Cut(a, "=")
		words := strings.Fields(line)
		m := &measure{name: name}
		for len(words) > 0 && strings.Contains(words[0], "=") {
			m.env, words = append(m.env, words[0]), words[1:]
		}
		if !ok || len(words) == 0 {
			fmt.Fprintf(os.Stderr, "interleave: %q: want NAME=CMD\n", a)
			os.Exit(2)
		}
		m.argv = words
		ms = append(ms, m)
	}
	if *evict {
		for _, m := range ms {
			if err := dropCache(m.argv[0]); err != nil {
				fmt.Fprintf(os.Stderr, "interleave: %s: %v\n", m.name, err)
				os.Exit(1)
			}
		}
	}
	for range *n {
		for _, j := range rand.Perm(len(ms)) {
			m := ms[j]
			cmd := exec.Command(m.argv[0], m.argv[1:]...)
			cmd.Env = append(os.Environ(), m.env...)
			start := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n%s", m.name, err, out)
				os.Exit(1)
			}
			m.wall = append(m.wall, time.Since(start))
			ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			m.cpu = append(m.cpu, time.Duration(ru.Utime.Nano()+ru.Stime.Nano()))
			m.faults += ru.Minflt
		}
	}
	median := func(d []time.Duration) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		if len(s)%2 == 0 {
			return float64(s[len(s)/2-1]+s[len(s)/2]) / 2e6
		}
		return float64(s[len(s)/2]) / 1e6
	}
	mean := func(d []time.Duration) float64 {
		var t time.Duration
		for _, x := range d {
			t += x
		}
		return float64(t) / float64(len(d)) / 1e6
	}
	fmt.Printf("%-12s %9s %9s %9s %7s %6s %6s\n", "command", "wall", "cpu med", "cpu mean", "faults", "wall/1", "cpu/1")
	w0, c0 := median(ms[0].wall), median(ms[0].cpu)
	for _, m := range ms {
		w, c := median(m.wall), median(m.cpu)
		fmt.Printf("%-12s %7.2fms %7.2fms %7.2fms %7d %6.2f %6.2f\n", m.name, w, c, mean(m.cpu), m.faults/int64(*n), w/w0, c/c0)
	}
}

// dropCache drops the file of program (found as exec finds it) from the
// page cache, once its pages are written.
func dropCache(program string) error {
	path, err := exec.LookPath(program)
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return err
	}
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}
