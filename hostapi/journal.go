package hostapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"time"

	"github.com/unitrun/unitrun/job"
)

// journalOutputMax bounds the journal output copied into a job's log.
const journalOutputMax = 16 << 20

// How the journal is read after a unit op's run: journald may store the
// last lines of a unit's output stream a moment after the unit has ended
// (journalctl --sync waits for streams only from systemd 256 on), so it is
// re-read every journalSettle until two reads agree and are not empty, for
// at most journalWait.
const (
	journalSettle = 100 * time.Millisecond
	journalWait   = 2 * time.Second
)

// copyJournal writes into the job's output log what the run of a unit op
// (the unit's invocation) logged to the journal, one line per entry as
// "journalctl -o cat" prints them, at most journalOutputMax bytes. A unit
// op's unit is the host's own and logs where it says, which for services
// is the journal: this is how the record's output tail and the logs
// endpoint see it.
//
// An entry is the run's when it carries the run's invocation ID, or, as
// journald leaves that out of the output of a process that ended before
// journald read its cgroup, when it comes from the unit's main process.
func (d *Daemon) copyJournal(ctx context.Context, id string, st *job.Status) error {
	argv := d.Journalctl
	if argv == nil {
		argv = []string{"journalctl"}
		if !d.mgr.IsSystem(ctx) {
			argv = append(argv, "--user")
		}
	}
	ctx, cancel := context.WithTimeout(ctx, journalWait+10*time.Second)
	defer cancel()
	exec.CommandContext(ctx, argv[0], append(argv[1:len(argv):len(argv)], "--sync")...).Run()
	var last []byte
	for deadline := time.Now().Add(journalWait); ; {
		b, err := readJournal(ctx, argv, st)
		if err != nil {
			return err
		}
		if len(b) > 0 && bytes.Equal(b, last) || time.Now().After(deadline) {
			last = b
			break
		}
		last = b
		time.Sleep(journalSettle)
	}
	out, err := d.store.OpenOutput(id)
	if err != nil {
		return err
	}
	defer out.Close()
	if _, err := out.Write(last); err != nil {
		return err
	}
	return out.Sync()
}

// readJournal returns the messages of the run's entries, at most
// journalOutputMax bytes.
func readJournal(ctx context.Context, argv []string, st *job.Status) ([]byte, error) {
	args := append(argv[1:len(argv):len(argv)], "--no-pager", "-q", "-o", "cat", "--",
		"_SYSTEMD_INVOCATION_ID="+st.InvocationID, "+", "USER_INVOCATION_ID="+st.InvocationID)
	if st.MainPID > 0 {
		pid := fmt.Sprint(st.MainPID)
		args = append(args, "+", "_SYSTEMD_UNIT="+st.Unit, "_PID="+pid, "+", "_SYSTEMD_USER_UNIT="+st.Unit, "_PID="+pid)
	}
	cmd := exec.CommandContext(ctx, argv[0], args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("reading the journal: %w", err)
	}
	b, copyErr := io.ReadAll(io.LimitReader(stdout, journalOutputMax))
	cmd.Process.Kill() // when it has more to print than the bound
	io.Copy(io.Discard, stdout)
	waitErr := cmd.Wait()
	switch {
	case copyErr != nil:
		return nil, copyErr
	case waitErr != nil && len(b) < journalOutputMax:
		return nil, fmt.Errorf("reading the journal: %v: %s", waitErr, bytes.TrimSpace(stderr.Bytes()))
	}
	return b, nil
}
