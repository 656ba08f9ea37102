package lazyregexp

import "testing"

func TestMatch(t *testing.T) {
	r := New(`^a{0,3}(b+)$`)
	if !r.MatchString("aabb") || r.MatchString("aaaab") || !r.Match([]byte("b")) {
		t.Errorf("%s: wrong matches", r)
	}
	if m := r.FindStringSubmatch("abbb"); len(m) != 2 || m[1] != "bbb" {
		t.Errorf("%s: FindStringSubmatch(abbb) = %q", r, m)
	}
}

// TestBadPatternFailsInTests checks that a test binary compiles at New, so
// a bad package-level pattern fails every test run of its package.
func TestBadPatternFailsInTests(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("New(`(`) did not panic in a test binary")
		}
	}()
	New(`(`)
}
