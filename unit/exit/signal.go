package exit

import (
	"strconv"
	"strings"
)

// signalNames are the Linux signal names by number, as on x86, ARM, RISC-V,
// PowerPC and s390. It is unitrun's one table of signal names: unit
// properties, job outcomes, the daemon's records and pod statuses all
// name signals through it.
var signalNames = [...]string{
	1: "HUP", 2: "INT", 3: "QUIT", 4: "ILL", 5: "TRAP", 6: "ABRT", 7: "BUS",
	8: "FPE", 9: "KILL", 10: "USR1", 11: "SEGV", 12: "USR2", 13: "PIPE",
	14: "ALRM", 15: "TERM", 16: "STKFLT", 17: "CHLD", 18: "CONT", 19: "STOP",
	20: "TSTP", 21: "TTIN", 22: "TTOU", 23: "URG", 24: "XCPU", 25: "XFSZ",
	26: "VTALRM", 27: "PROF", 28: "WINCH", 29: "IO", 30: "PWR", 31: "SYS",
}

// SigRTMin and SigRTMax are the real-time signal range of glibc on Linux,
// and NSig is _NSIG.
const (
	SigRTMin = 34
	SigRTMax = 64
	NSig     = 65
)

// SignalName returns the name of signal n as systemd's signal_to_string
// writes it (in $EXIT_STATUS, for one): the name without "SIG" for 1..31
// ("KILL", "TERM"), "RTMIN+k" for a real-time signal, and otherwise the
// number ("32"). unitrun's JSON writes signals in this form.
func SignalName(n int) string {
	switch {
	case n > 0 && n < len(signalNames):
		return signalNames[n]
	case n >= SigRTMin && n <= SigRTMax:
		return "RTMIN+" + strconv.Itoa(n-SigRTMin)
	}
	return strconv.Itoa(n)
}

// SignalNumber is the inverse of SignalName: it reads a signal as
// systemd's signal_to_string writes it, and reports false for any other
// string (a "SIG" prefix, a number that has a name, a number out of range).
func SignalNumber(s string) (int, bool) {
	for n, name := range signalNames {
		if name != "" && name == s {
			return n, true
		}
	}
	if k, ok := strings.CutPrefix(s, "RTMIN+"); ok {
		n, err := strconv.Atoi(k)
		if err != nil || n < 0 || SigRTMin+n > SigRTMax || strconv.Itoa(n) != k {
			return 0, false
		}
		return SigRTMin + n, true
	}
	n, err := strconv.Atoi(s)
	if err != nil || strconv.Itoa(n) != s || n < len(signalNames) || n >= SigRTMin {
		return 0, false
	}
	return n, true
}
