package hostapi

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/unitrun/unitrun/internal/lazyregexp"
)

// Outcome is how a job's unit ended, as its ExecStopPost= saw it: the
// values systemd gives as $SERVICE_RESULT, $EXIT_CODE and $EXIT_STATUS
// (systemd.exec(5), "Environment Variables in Spawned Processes").
type Outcome struct {
	// ServiceResult is the unit's result: success, protocol, timeout,
	// exit-code, signal, core-dump, watchdog, exec-condition, oom-kill,
	// start-limit-hit or resources in systemd 252.
	ServiceResult string
	// ExitCode is "exited", "killed" or "dumped", or "" when systemd never
	// identified a main process.
	ExitCode string
	// ExitStatus is the exit status ("0" to "255") when ExitCode is
	// "exited", else the signal's name without "SIG" (such as "TERM"); ""
	// exactly when ExitCode is.
	ExitStatus string
}

// outcomeKeys are the lines of an outcome file, in order.
var outcomeKeys = [3]string{"SERVICE_RESULT", "EXIT_CODE", "EXIT_STATUS"}

// maxOutcome bounds the outcome file; a valid one is far smaller.
const maxOutcome = 512

var (
	serviceResultRE = lazyregexp.New(`^[a-z][a-z0-9-]*$`)
	signalNameRE    = lazyregexp.New(`^([A-Z][A-Z0-9]*(\+[0-9]+)?|[0-9]+)$`)
)

// ReadOutcome reads the job's outcome file. It reports false, with no
// error, when the file does not exist (the unit has not stopped, or its
// ExecStopPost= did not run), and an error wrapping ErrNotFound when there
// is no such job. The file must be exactly the three lines that
// OutcomeCommand writes:
//
//	SERVICE_RESULT=<result>
//	EXIT_CODE=<code>
//	EXIT_STATUS=<status>
func (s *Store) ReadOutcome(id string) (Outcome, bool, error) {
	f, err := s.openJobFile(id, outcomeFile, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return Outcome{}, false, nil
	}
	if err != nil {
		return Outcome{}, false, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxOutcome+1))
	if err != nil {
		return Outcome{}, false, err
	}
	o, err := parseOutcome(data)
	if err != nil {
		return Outcome{}, false, fmt.Errorf("job %s: outcome: %w", id, err)
	}
	return o, true, nil
}

// parseOutcome parses the outcome file strictly.
func parseOutcome(data []byte) (Outcome, error) {
	if len(data) > maxOutcome {
		return Outcome{}, fmt.Errorf("longer than %d bytes", maxOutcome)
	}
	text := string(data)
	if !strings.HasSuffix(text, "\n") {
		return Outcome{}, errors.New("does not end with a newline")
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) != len(outcomeKeys) {
		return Outcome{}, fmt.Errorf("%d lines, want %d", len(lines), len(outcomeKeys))
	}
	var vals [3]string
	for i, line := range lines {
		v, ok := strings.CutPrefix(line, outcomeKeys[i]+"=")
		if !ok {
			return Outcome{}, fmt.Errorf("line %d: want %s=", i+1, outcomeKeys[i])
		}
		vals[i] = v
	}
	o := Outcome{ServiceResult: vals[0], ExitCode: vals[1], ExitStatus: vals[2]}
	if !serviceResultRE.MatchString(o.ServiceResult) {
		return Outcome{}, fmt.Errorf("SERVICE_RESULT %q is not a service result", o.ServiceResult)
	}
	switch o.ExitCode {
	case "":
		if o.ExitStatus != "" {
			return Outcome{}, fmt.Errorf("EXIT_STATUS %q without EXIT_CODE", o.ExitStatus)
		}
	case "exited":
		if n, err := strconv.Atoi(o.ExitStatus); err != nil || n < 0 || n > 255 || strconv.Itoa(n) != o.ExitStatus {
			return Outcome{}, fmt.Errorf("EXIT_STATUS %q is not an exit status 0 to 255", o.ExitStatus)
		}
	case "killed", "dumped":
		if !signalNameRE.MatchString(o.ExitStatus) {
			return Outcome{}, fmt.Errorf("EXIT_STATUS %q is not a signal name", o.ExitStatus)
		}
	default:
		return Outcome{}, fmt.Errorf(`EXIT_CODE %q is not "exited", "killed" or "dumped"`, o.ExitCode)
	}
	return o, nil
}

// outcomeNameRE is the form of an outcome file's name: safe as a word of
// the shell script OutcomeCommand writes.
var outcomeNameRE = lazyregexp.New(`^[A-Za-z0-9_][A-Za-z0-9._-]*$`)

// OutcomeCommand returns the argv of an ExecStopPost= command that writes
// the outcome file at path: the three lines ReadOutcome reads, to a temp
// file beside it, synced, renamed over path, and the directory synced;
// unless the daemon has recorded the job's outcome already (a file named
// "recorded" beside path, see Store.markRecorded), when it writes nothing.
//
// The argv is
//
//	/usr/bin/env -C <dir of path> /bin/sh -c <script>
//
// where the script is fixed text naming only the file's base name, which
// must match [A-Za-z0-9_][A-Za-z0-9._-]*. It reads the three values with
// printenv, so that no '$' and no ';' appears in any word. This is needed
// because, in systemd 252, the argv of a command set over D-Bus is not
// passed verbatim: when the command runs, systemd expands "${VAR}" anywhere
// in a word, "$VAR" when it is a whole word (dropping the word when VAR is
// unset) and "$$" to "$", as in unit files. And daemon-reload
// re-reads a transient unit from the file systemd wrote for it, which
// escapes '$' as "\$" and ';' as "\;" and does not undo the escapes when
// read, so that every word holding either is altered (ExecStopPostEx= with
// the "no-env-expand" flag is worse: systemd 252 writes it under a key that
// its own parser ignores, so the command is dropped). Specifiers (%) are
// not expanded in commands set over D-Bus. This was established on systemd
// 252.38 with a user manager and go-systemd's StartTransientUnit. The
// command needs coreutils 8.28 or later (env -C, sync of single files).
//
// OutcomeCommand refuses a path that is not absolute and clean, that holds
// '$' or ';', or whose base name is not of the form above. Paths from
// Store.OutcomePath always pass.
func OutcomeCommand(path string) ([]string, error) {
	dir, name := filepath.Split(path)
	switch {
	case !filepath.IsAbs(path) || filepath.Clean(path) != path:
		return nil, fmt.Errorf("outcome path %q: must be absolute and clean", path)
	case strings.ContainsAny(path, "$;\x00"):
		return nil, fmt.Errorf("outcome path %q: must not contain '$', ';' or NUL", path)
	case !outcomeNameRE.MatchString(name):
		return nil, fmt.Errorf("outcome path %q: base name must match %s", path, outcomeNameRE)
	}
	script := "[ -e " + recordedFile + " ] || ( umask 077 && printf '" +
		outcomeKeys[0] + `=%s\n` + outcomeKeys[1] + `=%s\n` + outcomeKeys[2] + `=%s\n' ` +
		"\"`printenv " + outcomeKeys[0] + "`\" \"`printenv " + outcomeKeys[1] + "`\" \"`printenv " + outcomeKeys[2] + "`\"" +
		" >" + name + ".tmp && sync " + name + ".tmp && mv -f " + name + ".tmp " + name + " && sync . )"
	return []string{"/usr/bin/env", "-C", filepath.Clean(dir), "/bin/sh", "-c", script}, nil
}
