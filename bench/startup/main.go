// Command startup measures what one short process costs: it runs a
// command line N times, one after another, and prints the median wall
// time and, from the kernel's accounting of each child, the mean CPU time
// (user and system) and minor page faults. bench/startup.sh runs it on
// unitrun's hook commands beside an empty Go program and /bin/true.
//
// Usage: startup [-n 200] [-env K=V]... NAME CMD [ARG...]
// It prints one line: NAME, wall, cpu, user, sys, faults.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
)

type envFlag []string

func (e *envFlag) String() string     { return strings.Join(*e, " ") }
func (e *envFlag) Set(v string) error { *e = append(*e, v); return nil }

func main() {
	n := flag.Int("n", 200, "runs")
	var env envFlag
	flag.Var(&env, "env", "K=V added to the command's environment (repeatable)")
	flag.Parse()
	if flag.NArg() < 2 {
		fmt.Fprintln(os.Stderr, "usage: startup [-n N] [-env K=V]... NAME CMD [ARG...]")
		os.Exit(2)
	}
	name, argv := flag.Arg(0), flag.Args()[1:]
	walls := make([]time.Duration, *n)
	var user, sys time.Duration
	var faults int64
	for i := range walls {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), env...)
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n%s", name, err, out)
			os.Exit(1)
		}
		walls[i] = time.Since(start)
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		user += time.Duration(ru.Utime.Nano())
		sys += time.Duration(ru.Stime.Nano())
		faults += ru.Minflt
	}
	slices.Sort(walls)
	per := func(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(*n)/1e6) }
	fmt.Printf("%-28s %8.2fms %10s %10s %10s %8d\n", name, float64(walls[*n/2])/1e6,
		per(user+sys), per(user), per(sys), faults/int64(*n))
}
