package scheduler

import (
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// writeProcessMetrics writes the Go runtime's go_* and the process's
// process_* metrics, read at each scrape, under the names Prometheus's
// own Go client gives them.
func writeProcessMetrics(w io.Writer) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	writeGauge(w, "go_goroutines", float64(runtime.NumGoroutine()))
	writeGauge(w, "go_gomaxprocs", float64(runtime.GOMAXPROCS(0)))
	writeType(w, "go_info", "gauge")
	io.WriteString(w, series("go_info", labels("version", runtime.Version()))+" 1\n")
	for _, g := range []struct {
		name string
		v    uint64
	}{
		{"go_memstats_alloc_bytes", ms.Alloc},
		{"go_memstats_sys_bytes", ms.Sys},
		{"go_memstats_heap_alloc_bytes", ms.HeapAlloc},
		{"go_memstats_heap_idle_bytes", ms.HeapIdle},
		{"go_memstats_heap_inuse_bytes", ms.HeapInuse},
		{"go_memstats_heap_objects", ms.HeapObjects},
		{"go_memstats_heap_released_bytes", ms.HeapReleased},
		{"go_memstats_heap_sys_bytes", ms.HeapSys},
		{"go_memstats_stack_inuse_bytes", ms.StackInuse},
		{"go_memstats_stack_sys_bytes", ms.StackSys},
		{"go_memstats_next_gc_bytes", ms.NextGC},
	} {
		writeGauge(w, g.name, float64(g.v))
	}
	writeGauge(w, "go_memstats_last_gc_time_seconds", float64(ms.LastGC)/1e9)
	writeCounter(w, "go_memstats_alloc_bytes_total", float64(ms.TotalAlloc))
	writeCounter(w, "go_memstats_mallocs_total", float64(ms.Mallocs))
	writeCounter(w, "go_memstats_frees_total", float64(ms.Frees))

	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		user, sys := time.Duration(ru.Utime.Nano()).Seconds(), time.Duration(ru.Stime.Nano()).Seconds()
		writeCounter(w, "process_cpu_seconds_total", user+sys)
		writeCounter(w, "process_cpu_seconds_user_total", user)
		writeCounter(w, "process_cpu_seconds_system_total", sys)
		writeCounter(w, "process_minor_pagefaults_total", float64(ru.Minflt))
		writeCounter(w, "process_major_pagefaults_total", float64(ru.Majflt))
	}
	// /proc/self/stat: after the command's ")", field 3 is the state;
	// 20 num_threads, 22 starttime (clock ticks since boot), 23 vsize
	// (bytes), 24 rss (pages).
	if stat, err := os.ReadFile("/proc/self/stat"); err == nil {
		if i := strings.LastIndexByte(string(stat), ')'); i >= 0 {
			f := strings.Fields(string(stat[i+1:]))
			field := func(n int) float64 {
				if n-3 >= len(f) {
					return 0
				}
				v, _ := strconv.ParseFloat(f[n-3], 64)
				return v
			}
			writeGauge(w, "go_threads", field(20))
			writeGauge(w, "process_num_threads", field(20))
			writeGauge(w, "process_virtual_memory_bytes", field(23))
			writeGauge(w, "process_resident_memory_bytes", field(24)*float64(os.Getpagesize()))
			if boot := bootTime(); boot > 0 {
				const ticks = 100 // USER_HZ, the same on every Linux architecture Go supports
				writeGauge(w, "process_start_time_seconds", boot+field(22)/ticks)
			}
		}
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		writeGauge(w, "process_open_fds", float64(len(fds)-1)) // less ReadDir's own
	}
	var nofile syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &nofile) == nil {
		writeGauge(w, "process_max_fds", float64(nofile.Cur))
	}
}

// bootTime is the host's boot time in seconds since the epoch, from
// /proc/stat's btime; 0 if it cannot be read.
func bootTime() float64 {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(stat)) {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			t, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return t
		}
	}
	return 0
}
