package pod

import "testing"

func TestUnitNames(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{SliceUnit("web"), "unitrun-pod-web.slice"},
		{TargetUnit("web"), "unitrun-pod-web.target"},
		{AppUnit("web", "server"), "unitrun-pod-web-server.service"},
		{reaperUnit("web", "server"), "unitrun-pod-web-server-reaper.service"},
		{ShutdownUnit("web"), "unitrun-pod-web-shutdown.service"},
		// '-' is escaped, so that pod a-b's app c and pod a's app b-c
		// differ, and pod a-b's slice is not inside pod a's.
		{AppUnit("a-b", "c"), `unitrun-pod-a\x2db-c.service`},
		{AppUnit("a", "b-c"), `unitrun-pod-a-b\x2dc.service`},
		{SliceUnit("a-b"), `unitrun-pod-a\x2db.slice`},
		// App x-reaper is not app x's reaper.
		{AppUnit("p", "x-reaper"), `unitrun-pod-p-x\x2dreaper.service`},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
}
