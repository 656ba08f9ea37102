package exit

import "testing"

func TestSignalName(t *testing.T) {
	for n, want := range map[int]string{1: "HUP", 9: "KILL", 15: "TERM", 31: "SYS", 32: "32", 33: "33", 34: "RTMIN+0", 37: "RTMIN+3", 64: "RTMIN+30", 65: "65"} {
		if got := SignalName(n); got != want {
			t.Errorf("SignalName(%d) = %q, want %q", n, got, want)
		}
	}
	// SignalNumber reads back every name SignalName writes for a signal.
	for n := 1; n < NSig; n++ {
		if got, ok := SignalNumber(SignalName(n)); !ok || got != n {
			t.Errorf("SignalNumber(%q) = %d, %v; want %d", SignalName(n), got, ok, n)
		}
	}
	// and nothing systemd's signal_to_string does not write.
	for _, s := range []string{"", "SIGKILL", "kill", "9", "0", "65", "-1", "RTMIN", "RTMIN+31", "RTMIN+01", "RTMIN+-1", "RTMAX-1", "032"} {
		if n, ok := SignalNumber(s); ok {
			t.Errorf("SignalNumber(%q) = %d, true; want false", s, n)
		}
	}
}
