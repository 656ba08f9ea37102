package job

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/unitrun/unitrun/manager"
)

// journalOutput copies the journal entries of the runs of a unit, chosen by
// their invocation IDs (_SYSTEMD_INVOCATION_ID), to stdout and stderr as
// journald stores them. It reads them with journalctl -o json, following
// the journal while the runs go on; every entry copied moves a cursor, so
// that a journalctl started anew (for one more run, or for the last read)
// goes on after the last entry copied: none is copied twice or skipped.
type journalOutput struct {
	journal        manager.Journal
	stdout, stderr io.Writer

	ids    []string
	follow *exec.Cmd
	copied chan error // the follower's copy, once it has read all it printed

	mu     sync.Mutex
	cursor string          // of the last entry copied
	runs   map[string]bool // the invocation IDs of the entries copied
	// streams holds the stream IDs (_STREAM_ID) of the entries copied, by
	// their invocation ID.
	streams map[string][]string
	err     error // the first error of a copy
}

// CopyJournal copies what the run st, which has ended, logged to the
// journal j (a manager's, as manager.Target gives it) to stdout and
// stderr, as UnitCmd does for a run it waited for: the entries of the
// run's invocation ID, each entry's message as one line (priority warning
// or more severe to stderr, the others to stdout; a nil writer discards
// its entries), then those of its streams that journald could not give to
// a unit (see journalOutput.readUnattributed). It returns the first error
// met in copying.
func CopyJournal(ctx context.Context, j manager.Journal, st *Status, stdout, stderr io.Writer) error {
	if st == nil || st.InvocationID == "" {
		return nil
	}
	o := &journalOutput{journal: j, stdout: stdout, stderr: stderr, ids: []string{st.InvocationID}}
	return o.finish(ctx, st)
}

// invoked follows the entries of the run id as well, from its first one
// on. It is a run's invoked hook, called in the run's goroutine.
func (o *journalOutput) invoked(id string) {
	if slices.Contains(o.ids, id) {
		return
	}
	o.ids = append(o.ids, id)
	o.stopFollowing()
	cmd, stdout := o.journalctl(context.Background(), o.args(true))
	if cmd == nil {
		return
	}
	o.follow, o.copied = cmd, make(chan error, 1)
	go func() { o.copied <- o.copy(stdout, nil) }()
}

// finish copies the entries that the runs followed have left in the
// journal. It first has journald store all it has received (syncJournal):
// once a run has ended, its processes have written all they will into
// their streams to journald, so everything they logged is then in the
// journal. Where journald cannot be asked (its socket is root's), finish
// gives it journalSettle instead. A stream that journald has not yet
// accepted when it answers the sync is not among what it stores first, so
// where no entry at all was found, which is what a run that ended very
// fast can meet on a busy host, finish looks once more after
// journalSettle. Then it copies the entries of the last run (last is its
// Status, if not nil) that journald could not give to a unit
// (readUnattributed). finish returns the first error met in copying.
func (o *journalOutput) finish(ctx context.Context, last *Status) error {
	if len(o.ids) > 0 {
		o.readRest(ctx)
		if o.none() && sleep(ctx, journalSettle) {
			o.readRest(ctx)
		}
		if last != nil && last.MainPID > 0 && !last.StartedAt.IsZero() {
			o.readUnattributed(ctx, last)
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// none reports whether no entry has been copied yet.
func (o *journalOutput) none() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.cursor == ""
}

// readRest has journald store what it has received, then copies every
// entry of the runs after the cursor.
func (o *journalOutput) readRest(ctx context.Context) {
	if syncJournal(ctx, o.journal) != nil {
		time.Sleep(journalSettle)
	}
	o.stopFollowing()
	o.read(ctx, o.args(false), nil)
}

// readUnattributed copies the entries of the run st that journald stored
// with no unit: those it read from one of the run's streams only after
// their writer had exited. journald names the unit of each line after the
// cgroup of the process that wrote it (its _PID, a child of the main
// process as well as the main process), read from /proc when it reads the
// line, and a user manager does not name the unit in the stream's header
// (only the system manager does), so on a busy host such entries have no
// _SYSTEMD_UNIT and no _SYSTEMD_INVOCATION_ID; they keep the stream's
// _STREAM_ID. The run's streams are those of its entries copied, and of
// the entries of its main process's PID since the run started
// (runStreams). readUnattributed copies the entries of these streams
// since the run started that carry no invocation ID, after the run's other
// entries. Where the run has no such stream (its main process wrote
// nothing itself, and journald gave none of its children's lines to the
// unit), nothing in the journal ties a stream to the run, and no line is
// copied: a guess could copy another unit's lines.
func (o *journalOutput) readUnattributed(ctx context.Context, st *Status) {
	since := fmt.Sprintf("--since=@%d", st.StartedAt.Unix()-1)
	streams := o.runStreams(ctx, st, since)
	if len(streams) == 0 {
		return
	}
	var matches []string
	for _, s := range streams {
		matches = append(matches, "_STREAM_ID="+s)
	}
	// Most often every entry has its invocation ID: a count, cheaper than
	// reading them all as JSON, tells. Each entry of the streams prints
	// its stream ID, and its invocation ID if it has one (the two are
	// random 128-bit IDs, never one another).
	ids := o.values(ctx, "_STREAM_ID,_SYSTEMD_INVOCATION_ID", append([]string{since}, matches...))
	n := 0
	for _, v := range ids {
		if slices.Contains(streams, v) {
			n++
		} else {
			n--
		}
	}
	if n > 0 {
		o.read(ctx, append(append(o.baseArgs(), since), matches...), func(e *entry) bool { return len(fieldValues(e.InvocationID)) == 0 })
	}
}

// runStreams returns the stream IDs of the entries of the run st copied,
// and of its main process's entries since the run started.
func (o *journalOutput) runStreams(ctx context.Context, st *Status, since string) []string {
	o.mu.Lock()
	streams := slices.Clone(o.streams[st.InvocationID])
	o.mu.Unlock()
	for _, s := range o.values(ctx, "_STREAM_ID", []string{since, "_PID=" + strconv.Itoa(st.MainPID)}) {
		if !slices.Contains(streams, s) {
			streams = append(streams, s)
		}
	}
	return streams
}

// values returns the values of fields (a comma-separated list of
// hexadecimal IDs) of the entries that match args, one a line as
// journalctl -o cat prints them: those of an entry in the order journald
// stored them, none of a field the entry lacks.
func (o *journalOutput) values(ctx context.Context, fields string, args []string) []string {
	args = append([]string{"--output=cat", "--output-fields=" + fields, "--quiet", "--no-pager", "--lines=all"}, args...)
	if o.journal.Dir != "" {
		args = append(args, "--directory="+o.journal.Dir)
	}
	cmd, stdout := o.journalctl(ctx, args)
	if cmd == nil {
		return nil
	}
	var vals []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if v := sc.Text(); v != "" {
			vals = append(vals, v)
		}
	}
	if err := sc.Err(); err != nil {
		o.fail(fmt.Errorf("reading the journal: %w", err))
	}
	io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil {
		o.fail(fmt.Errorf("reading the journal: %w", err))
	}
	return vals
}

// read runs journalctl with args and copies the entries it prints that
// keep accepts (all, if keep is nil).
func (o *journalOutput) read(ctx context.Context, args []string, keep func(*entry) bool) {
	cmd, stdout := o.journalctl(ctx, args)
	if cmd == nil {
		return
	}
	o.fail(o.copy(stdout, keep))
	if err := cmd.Wait(); err != nil {
		o.fail(fmt.Errorf("reading the journal: %w", err))
	}
}

// journalctl starts journalctl with args and returns it with its standard
// output, or nil once it has recorded why it could not start it.
func (o *journalOutput) journalctl(ctx context.Context, args []string) (*exec.Cmd, io.Reader) {
	cmd := exec.CommandContext(ctx, "journalctl", args...)
	stdout, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		o.fail(fmt.Errorf("reading the journal: %w", err))
		return nil, nil
	}
	return cmd, stdout
}

// journalSettle is how long finish waits for journald to store the last
// lines of a run when it cannot ask it to.
const journalSettle = 250 * time.Millisecond

// stopFollowing ends the follower, if there is one, once its copy has
// taken every whole entry it printed.
func (o *journalOutput) stopFollowing() {
	if o.follow == nil {
		return
	}
	o.follow.Process.Kill()
	o.fail(<-o.copied)
	o.follow.Wait()
	o.follow = nil
}

// baseArgs returns the journalctl arguments of every read: entries as
// JSON, all of them, from the manager's journal.
func (o *journalOutput) baseArgs() []string {
	args := []string{"--output=json", "--all", "--quiet", "--no-pager", "--lines=all"}
	if o.journal.Dir != "" {
		args = append(args, "--directory="+o.journal.Dir)
	}
	return args
}

// args returns journalctl's arguments for the entries of the runs after
// the cursor.
func (o *journalOutput) args(follow bool) []string {
	args := o.baseArgs()
	if follow {
		args = append(args, "--follow")
	}
	o.mu.Lock()
	if o.cursor != "" {
		args = append(args, "--after-cursor="+o.cursor)
	}
	o.mu.Unlock()
	for _, id := range o.ids {
		args = append(args, "_SYSTEMD_INVOCATION_ID="+id)
	}
	return args
}

func (o *journalOutput) fail(err error) {
	o.mu.Lock()
	if o.err == nil {
		o.err = err
	}
	o.mu.Unlock()
}

// copy writes the message of each entry that journalctl prints on r, and
// that keep accepts (all, if keep is nil), to stdout or stderr (see
// entry.dest) and moves the cursor past it. A last line cut short
// (journalctl was killed) is left for the next read.
func (o *journalOutput) copy(r io.Reader, keep func(*entry) bool) error {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		var e entry
		if err := json.Unmarshal(line, &e); err != nil {
			return fmt.Errorf("reading the journal: %w", err)
		}
		if keep != nil && !keep(&e) {
			continue
		}
		w := o.stdout
		if e.priority() <= warningPriority {
			w = o.stderr
		}
		if w != nil {
			for _, msg := range fieldValues(e.Message) {
				if _, err := w.Write(append(msg, e.terminator()...)); err != nil {
					return err
				}
			}
		}
		o.mu.Lock()
		o.cursor = e.Cursor
		for _, id := range fieldValues(e.InvocationID) {
			if o.runs == nil {
				o.runs = make(map[string]bool)
				o.streams = make(map[string][]string)
			}
			o.runs[string(id)] = true
			for _, s := range fieldValues(e.StreamID) {
				if !slices.Contains(o.streams[string(id)], string(s)) {
					o.streams[string(id)] = append(o.streams[string(id)], string(s))
				}
			}
		}
		o.mu.Unlock()
	}
}

// warningPriority is syslog's LOG_WARNING: entries of this priority and
// the more severe ones go to stderr.
const warningPriority = 4

// entry is the part of a journal entry, as journalctl -o json --all prints
// it, that the output of a run needs.
type entry struct {
	Message   json.RawMessage `json:"MESSAGE"`
	Priority  json.RawMessage `json:"PRIORITY"`
	LineBreak json.RawMessage `json:"_LINE_BREAK"`
	Cursor    string          `json:"__CURSOR"`
	// InvocationID is the run's, if journald knew the entry's unit.
	InvocationID json.RawMessage `json:"_SYSTEMD_INVOCATION_ID"`
	// Unit is the entry's unit, if journald knew it.
	Unit json.RawMessage `json:"_SYSTEMD_UNIT"`
	// StreamID names the stdout stream the entry came from, if any.
	StreamID json.RawMessage `json:"_STREAM_ID"`
	// PID is the process that wrote the entry.
	PID json.RawMessage `json:"_PID"`
}

// priority returns the entry's syslog priority, info (6) if it has none.
func (e *entry) priority() int {
	if v := fieldValues(e.Priority); len(v) > 0 {
		if p, err := strconv.Atoi(string(v[0])); err == nil {
			return p
		}
	}
	return 6
}

// terminator returns what ended the line in the stream the entry came
// from: journald leaves it out of MESSAGE, and says in _LINE_BREAK when it
// was not a newline: a NUL, or none at all (the stream ended, the line was
// longer than LineMax=, or another process wrote to the stream).
func (e *entry) terminator() []byte {
	v := fieldValues(e.LineBreak)
	switch {
	case len(v) == 0:
		return []byte("\n")
	case string(v[0]) == "nul":
		return []byte{0}
	}
	return nil
}

// fieldValues decodes a field as journalctl -o json prints it: a string,
// an array of bytes (a value that is not printable UTF-8), null, or an
// array of such values for a field the entry has more than once.
func fieldValues(raw json.RawMessage) [][]byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return [][]byte{[]byte(s)}
	}
	var b []byte
	var ints []int
	if json.Unmarshal(raw, &ints) == nil {
		for _, c := range ints {
			b = append(b, byte(c))
		}
		return [][]byte{b}
	}
	var many []json.RawMessage
	if json.Unmarshal(raw, &many) != nil {
		return nil
	}
	var vals [][]byte
	for _, m := range many {
		vals = append(vals, fieldValues(m)...)
	}
	return vals
}

// syncJournal asks journald to store all it has received (the
// io.systemd.Journal.Synchronize call of its varlink socket, as
// journalctl --sync does) and waits for its answer: journald answers after
// it has processed every message and stream data queued before the call.
func syncJournal(ctx context.Context, j manager.Journal) error {
	dir := j.Sockets
	if dir == "" {
		dir = "/run/systemd/journal"
	}
	ctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", filepath.Join(dir, "io.systemd.journal"))
	if err != nil {
		return err
	}
	defer c.Close()
	if deadline, ok := ctx.Deadline(); ok {
		c.SetDeadline(deadline)
	}
	if _, err := c.Write([]byte(`{"method":"io.systemd.Journal.Synchronize","parameters":{}}` + "\x00")); err != nil {
		return err
	}
	reply, err := bufio.NewReader(c).ReadBytes(0)
	if err != nil {
		return err
	}
	var r struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(reply[:len(reply)-1], &r); err != nil {
		return err
	}
	if r.Error != "" {
		return errors.New(r.Error)
	}
	return nil
}
