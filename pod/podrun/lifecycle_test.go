package podrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/record"
)

// preStopSeen is the preStop hook and command of an app whose command, at
// its stop signal, prints what the hook wrote to %[1]s/pre-stop (the
// manifest's first argument), "stopping", and exits 0. Its trap forks no
// process: systemd signals a unit's processes again and again until a
// pass finds no new one, so that a process a trap forks may get the stop
// signal too.
const preStopSeen = `    preStop: {exec: ["/bin/sh", "-c", "echo stopping > %[1]s/pre-stop"]}
    exec: ["/bin/sh", "-c", "trap 'read -r seen < %[1]s/pre-stop; echo $seen; exit 0' TERM; while :; do sleep 0.1; done"]`

// An app's postStart hook runs beside its command's start, and its
// preStop hook runs when a stop ends the run, before the stop signal: the
// command, which traps SIGTERM, finds the preStop hook's file there. A run
// that ends on its own runs no preStop hook. HTTP hooks GET their path on
// 127.0.0.1, and a status of 500 is no failure, as with the kubelet.
func TestPodLifecycleHooks(t *testing.T) {
	r := newRunner(t)
	dir := t.TempDir()
	got := make(chan string, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		got <- req.URL.Path
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	name := run(t, r, fmt.Sprintf(`
name: hooks
apps:
  - name: web
    postStart: {exec: ["/bin/sh", "-c", "echo started > %[1]s/post-start"]}
`+preStopSeen+`
  - name: quick
    preStop: {exec: ["/bin/sh", "-c", "echo ran > %[1]s/quick-pre-stop"]}
    exec: ["/bin/true"]
  - name: api
    postStart: {http: {port: %[2]d, path: /post-start}}
    preStop: {http: {port: %[2]d, path: /pre-stop}}
    exec: ["/bin/sleep", "600"]
`, dir, port), record.AllExit)
	if p := <-got; p != "/post-start" {
		t.Errorf("api's postStart hook GET %s", p)
	}
	if got := waitFile(t, filepath.Join(dir, "post-start")); got != "started\n" {
		t.Errorf("postStart hook wrote %q", got)
	}
	for appState(t, r, name, "quick") != record.AppExited {
		time.Sleep(20 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := r.Stop(ctx, name, 0)
	if err != nil {
		t.Fatal(err)
	}
	wantApp(t, s, "web", record.AppExited, 0)
	// The shell may also say that its sleep was terminated.
	if data, _ := os.ReadFile(pod.LogFile(r.StateDir, name, "web")); !strings.HasSuffix(string(data), "stopping\n") {
		t.Errorf("web's command, at its stop signal, read %q from the preStop hook's file, want %q", data, "stopping\n")
	}
	select {
	case p := <-got:
		if p != "/pre-stop" {
			t.Errorf("api's preStop hook GET %s", p)
		}
	default:
		t.Error("api's preStop hook sent no GET")
	}
	if _, err := os.Stat(filepath.Join(dir, "quick-pre-stop")); err == nil {
		t.Error("the preStop hook of an app that ended on its own ran")
	}
}

// A stop that comes while an app's postStart hook still runs stops the
// app once the hook has ended, so that its preStop hook runs before its
// stop signal, as the kubelet runs a container's preStop hook whenever it
// stops it once it has started; the other apps get their stop signal
// meanwhile: slow's postStart hook ends only once plain has had its
// SIGTERM, and slow's command, which traps SIGTERM, finds the preStop
// hook's file there. A postStart hook that never ends holds its app's
// stop back for the app's stopTimeout only: stuck then gets its stop
// signal, with no time left for its preStop hook, and the stop returns
// within the test's minute.
func TestPodStopDuringPostStart(t *testing.T) {
	r := newRunner(t)
	dir := t.TempDir()
	name := create(t, r, fmt.Sprintf(`
name: post-start-stop
apps:
  - name: plain
    exec: ["/bin/sh", "-c", "trap ': > %[1]s/plain-term; exit 0' TERM; touch %[1]s/plain-began; while :; do sleep 0.1; done"]
  - name: slow
    postStart: {exec: ["/bin/sh", "-c", "touch %[1]s/slow-began; while [ ! -e %[1]s/plain-term ]; do sleep 0.02; done"]}
`+preStopSeen+`
  - name: stuck
    postStart: {exec: ["/bin/sh", "-c", "touch %[1]s/stuck-began; exec sleep 600"]}
    preStop: {exec: ["/bin/sh", "-c", "echo ran > %[1]s/stuck-pre-stop"]}
    stopTimeout: 1s
    exec: ["/bin/sleep", "600"]
`, dir))
	// The start job is done once every postStart hook has ended.
	started := make(chan error, 1)
	go func() { started <- r.Start(context.Background(), name, record.AllExit) }()
	for _, f := range []string{"plain-began", "slow-began", "stuck-began"} {
		waitFile(t, filepath.Join(dir, f))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := r.Stop(ctx, name, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-started; err != nil && !errors.As(err, new(*EndedError)) {
		t.Error(err)
	}
	wantApp(t, s, "plain", record.AppExited, 0)
	wantApp(t, s, "slow", record.AppExited, 0)
	if data, _ := os.ReadFile(pod.LogFile(r.StateDir, name, "slow")); !strings.HasSuffix(string(data), "stopping\n") {
		t.Errorf("slow's command, at its stop signal, read %q from the preStop hook's file, want %q", data, "stopping\n")
	}
	if a := appOf(t, s, "stuck"); a.Signal != "TERM" || a.FinishedAt.IsZero() {
		t.Errorf("stuck: %s, signal %q, finished at %v; want its end by TERM recorded", a.State, a.Signal, a.FinishedAt)
	}
	if _, err := os.Stat(filepath.Join(dir, "stuck-pre-stop")); err == nil {
		t.Error("stuck's preStop hook ran after its stopTimeout was spent waiting for its postStart hook")
	}
}

// A postStart hook that fails stops the run, which fails with a message
// that names the hook, as the kubelet kills the container
// (FailedPostStartHook).
func TestPodPostStartFails(t *testing.T) {
	r := newRunner(t)
	name := run(t, r, `
name: post-start-fails
apps:
  - name: web
    postStart: {exec: ["/bin/sh", "-c", "exit 3"]}
    exec: ["/bin/sleep", "600"]
`, "")
	s := wait(t, r, name)
	a := appOf(t, s, "web")
	if a.State != record.AppFailed || !strings.HasPrefix(a.Message, "postStart hook failed: exit status 3") {
		t.Errorf("app web after its postStart hook failed: %s, message %q; want failed, postStart hook failed: exit status 3", a.State, a.Message)
	}
	if s.Phase != pod.PodFailed {
		t.Errorf("pod %s, want Failed", s.Phase)
	}
}

// A sleep hook waits in unitrun's own hook process, as the kubelet's
// sleep action does: a postStart sleep of 0 lets the run go on, a preStop
// sleep holds the stop signal back for its length, and the app's
// stopTimeout cuts a longer one short, as the grace period bounds the
// kubelet's preStop (the stop of a ten-minute sleep returns within the
// test's minute).
func TestPodSleepHooks(t *testing.T) {
	r := newRunner(t)
	name := run(t, r, `
name: sleep-hooks
apps:
  - name: web
    postStart: {sleep: 0s}
    preStop: {sleep: 2s}
    exec: ["/bin/sleep", "600"]
  - name: bounded
    preStop: {sleep: 10min}
    stopTimeout: 1s
    exec: ["/bin/sleep", "600"]
`, record.AllExit)
	for _, app := range []string{"web", "bounded"} {
		for appState(t, r, name, app) != record.AppRunning {
			time.Sleep(20 * time.Millisecond)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stopped := time.Now()
	s, err := r.Stop(ctx, name, 0)
	if err != nil {
		t.Fatal(err)
	}
	web := appOf(t, s, "web")
	if web.Signal != "TERM" {
		t.Errorf("web ended with signal %q, want TERM after its preStop sleep", web.Signal)
	}
	if slept := web.FinishedAt.Sub(stopped); slept < 2*time.Second {
		t.Errorf("web ended %v after the stop, before its preStop sleep of 2s was over", slept)
	}
	if b := appOf(t, s, "bounded"); b.Signal != "TERM" {
		t.Errorf("bounded ended with signal %q, want TERM once its stopTimeout cut its preStop sleep short", b.Signal)
	}
}

// A postStart hook waits for the run's main process to have executed the
// command, and a main process whose main thread has gone while another
// of its threads still runs has not ended: so it is while the exec hook
// executes the command from a thread other than its main one, until the
// exec completes. Made here for good with a process whose main thread
// exits on its own.
func TestCommandStartedWithMainThreadGone(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 to make a process whose main thread exits:", err)
	}
	sysExit := map[string]int{"amd64": 60, "arm64": 93}[runtime.GOARCH]
	if sysExit == 0 {
		t.Skip("the exit system call's number on", runtime.GOARCH, "is not known here")
	}
	cmd := exec.Command(python, "-c", fmt.Sprintf(`import ctypes, threading, time
threading.Thread(target=time.sleep, args=(600,)).start()
ctypes.CDLL(None).syscall(%d, 0)`, sysExit))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	for {
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		if fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:])); fields[0] == "Z" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Setenv("MAINPID", pid)
	if !commandStarted(context.Background()) {
		t.Error("a process whose main thread has gone, another still running, counts as ended")
	}
	cmd.Process.Kill()
	cmd.Wait()
	if commandStarted(context.Background()) {
		t.Error("a process that has ended counts as started")
	}
}
