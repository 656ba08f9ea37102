package podrun

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of the CPU times in /proc/PID/stat (USER_HZ,
// sysconf(_SC_CLK_TCK)), 100 per second on every Linux architecture.
const clockTick = 10 * time.Millisecond

// procInfo is what /proc tells of one process.
type procInfo struct {
	PID int
	// UID is the process's real user id.
	UID int
	// CPU is the CPU time the process used (user and system); Children
	// that of the children it waited for.
	CPU, Children time.Duration
	// RSS is the resident memory, in bytes.
	RSS uint64
	// Threads is the number of its threads.
	Threads uint64
	// Read and Written are the bytes it made the block layer read and
	// write; nil if /proc/PID/io cannot be read.
	Read, Written *uint64
	// Command is its command line, arguments separated by spaces, or its
	// name in brackets for a process without one (a kernel thread, a
	// zombie), as ps prints them.
	Command string
}

// readProc reads /proc/PID for process pid.
func readProc(pid int) (procInfo, error) {
	dir := fmt.Sprintf("/proc/%d/", pid)
	p := procInfo{PID: pid}
	stat, err := os.ReadFile(dir + "stat")
	if err != nil {
		return p, err
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || end < open {
		return p, fmt.Errorf("%sstat: not understood", dir)
	}
	name := string(stat[open+1 : end])
	f := strings.Fields(string(stat[end+1:]))
	// Fields from the state (field 3 of stat(5)) on: utime is field 14,
	// stime 15, cutime 16, cstime 17, num_threads 20, rss 24 (pages).
	if len(f) < 22 {
		return p, fmt.Errorf("%sstat: not understood", dir)
	}
	field := func(n int) uint64 {
		v, _ := strconv.ParseUint(f[n-3], 10, 64)
		return v
	}
	ticks := func(n ...int) time.Duration {
		var sum uint64
		for _, i := range n {
			sum += field(i)
		}
		return time.Duration(sum) * clockTick
	}
	p.CPU, p.Children = ticks(14, 15), ticks(16, 17)
	p.Threads = field(20)
	p.RSS = field(24) * uint64(os.Getpagesize())
	if status, err := os.ReadFile(dir + "status"); err == nil {
		p.UID = statusUID(status)
	}
	if io, err := os.ReadFile(dir + "io"); err == nil {
		p.Read, p.Written = ioField(io, "read_bytes"), ioField(io, "write_bytes")
	}
	cmdline, _ := os.ReadFile(dir + "cmdline")
	p.Command = strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))
	if p.Command == "" {
		p.Command = "[" + name + "]"
	}
	return p, nil
}

// statusUID returns the real user id in status, the text of
// /proc/PID/status, or -1.
func statusUID(status []byte) int {
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				if uid, err := strconv.Atoi(f[0]); err == nil {
					return uid
				}
			}
		}
	}
	return -1
}

// ioField returns the value of the field name in io, the text of
// /proc/PID/io, or nil.
func ioField(io []byte, name string) *uint64 {
	for line := range strings.Lines(string(io)) {
		if rest, ok := strings.CutPrefix(line, name+":"); ok {
			if v, err := strconv.ParseUint(strings.TrimSpace(rest), 10, 64); err == nil {
				return &v
			}
		}
	}
	return nil
}

// usage is the process's share of its unit's usage.
func (p procInfo) usage() Usage {
	cpu := uint64(p.CPU + p.Children)
	return Usage{CPUNSec: &cpu, MemoryBytes: &p.RSS, Tasks: &p.Threads, IOReadBytes: p.Read, IOWriteBytes: p.Written}
}
