package boot

import (
	"fmt"
	"strings"
	"testing"
)

// An overlay's layers are named relative to their directory in its mount
// options, which must fit in the page a mount takes: too many layers,
// layers of two directories and paths with ':' or ',' are refused.
func TestOverlayOptions(t *testing.T) {
	layers := func(n int) []string {
		var l []string
		for i := range n {
			l = append(l, fmt.Sprintf("/var/lib/unitrun/images/layers/sha256/%064x", i))
		}
		return l
	}
	o := Overlay{Root: "/s/root", Upper: "/s/upper", Work: "/s/work", Lower: layers(2)}
	dir, opts, err := o.Options()
	if want := "lowerdir=" + fmt.Sprintf("%064x:%064x", 0, 1) + ",upperdir=/s/upper,workdir=/s/work"; err != nil || dir != "/var/lib/unitrun/images/layers/sha256" || opts != want {
		t.Errorf("options: %q, %q, %v; want %q", dir, opts, err, want)
	}
	if err := (Overlay{Root: "/r", Upper: "/u", Work: "/w", Lower: layers(60)}).Check(); err != nil {
		t.Errorf("60 layers: %v", err)
	}
	for _, tt := range []struct {
		o    Overlay
		want string
	}{
		{Overlay{Root: "/r", Upper: "/u", Work: "/w", Lower: layers(64)}, "64 layers make 4191 bytes of mount options, more than the 4095 a mount takes"},
		{Overlay{Root: "/r", Upper: "/u", Work: "/w", Lower: []string{"/a/x", "/b/y"}}, "layer /b/y is not a directory of /a"},
		{Overlay{Root: "/r", Upper: "/u:x", Work: "/w", Lower: []string{"/a/x"}}, "/u:x holds ':' or ','"},
		{Overlay{Root: "/r", Upper: "/u", Work: "/w"}, "no layers"},
	} {
		if err := tt.o.Check(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%d layers: %v, want %q", len(tt.o.Lower), err, tt.want)
		}
	}
}
