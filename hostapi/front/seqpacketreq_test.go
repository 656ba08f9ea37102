package front_test

import (
	"testing"

	"github.com/unitrun/unitrun/hostapi/internal/daemontest"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

// TestSeqpacketRequestRefusals: each malformed request packet is answered
// with an error in the caller's words, and no job. An empty packet was
// answered with Go's read error ("bad_request: request: read unixpacket
// argv.sock->@: EOF").
func TestSeqpacketRequestRefusals(t *testing.T) {
	d, _ := newTestDaemon(t, systemdtest.Conn(t), "")
	_, argv := serveTest(t, d)
	for _, tc := range []struct{ pkt, want string }{
		{"", "bad_request: request: empty packet"},
		{"\x00", "bad_request: request: op name is empty"},
		{"\xff\x00", "bad_request: request: op name is not valid UTF-8"},
	} {
		if ok, id, msg := daemontest.SeqpacketRoundTrip(t, argv, []byte(tc.pkt)); ok || id != "" || msg != tc.want {
			t.Errorf("packet %q: %v %q %q; want no job and %q", tc.pkt, ok, id, msg, tc.want)
		}
	}
	if recs, _ := d.List(); len(recs) != 0 {
		t.Errorf("refused packets made jobs: %v", recs)
	}
}
