package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/unitrun/unitrun/internal/systemdtest"
)

// The tmpfs of a memory-backed emptyDir with a sizeLimit is mounted in the
// manager's view, where the apps' units take their mounts from, and is gone
// from it with its pod, for every pod: also once a mount has run on the
// main thread, which Go then keeps parked in the manager's namespace (the
// pods are mounted several at once so that the main thread may run one:
// when none does, as in about one run of three, the test cannot tell).
func TestTmpfsInManagersView(t *testing.T) {
	ctx := context.Background()
	e := newEngine(systemdtest.Dial(t), systemdtest.RunDir(t), "", "")
	pid, err := e.conn.PID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sameFile(t, fmt.Sprintf("/proc/%d/ns/mnt", pid), "/proc/thread-self/ns/mnt") {
		t.Skip("the test manager shares the test's mount namespace: no other view to mount in")
	}
	const pods = 8
	var names [pods]string
	for i := range names {
		names[i] = fmt.Sprintf("test-tmpfs-%d-%d", os.Getpid(), i)
		t.Cleanup(func() { e.removeMemoryDir(ctx, names[i]) })
	}
	for round := range 5 {
		errs := make([]error, pods)
		var wg sync.WaitGroup
		for i, name := range names {
			dir := filepath.Join(memoryDir(name), "mem")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = e.mountTmpfs(ctx, map[string]*volume{"mem": {dir: dir, tmpfsSize: 1 << 20}})
			}()
		}
		wg.Wait()
		for i, name := range names {
			dir := filepath.Join(memoryDir(name), "mem")
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			if !tmpfsAt(t, pid, dir) {
				t.Fatalf("round %d: no tmpfs at %s in the manager's view", round, dir)
			}
			if err := e.removeMemoryDir(ctx, name); err != nil {
				t.Fatal(err)
			}
			if tmpfsAt(t, pid, dir) {
				t.Fatalf("round %d: the tmpfs at %s stays in the manager's view once its pod is removed", round, dir)
			}
		}
	}
}

// sameFile reports whether paths a and b name the same file.
func sameFile(t *testing.T, a, b string) bool {
	t.Helper()
	sa, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := os.Stat(b)
	if err != nil {
		t.Fatal(err)
	}
	return os.SameFile(sa, sb)
}

// tmpfsAt reports whether process pid sees a tmpfs mounted at dir.
func tmpfsAt(t *testing.T, pid int, dir string) bool {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if f, g := strings.Fields(pre), strings.Fields(post); ok && len(f) >= 5 && len(g) >= 1 && f[4] == dir && g[0] == "tmpfs" {
			return true
		}
	}
	return false
}
