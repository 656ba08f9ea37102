package hostapi

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/unitrun/unitrun/internal/atomicfile"
)

// WriteOutcome writes the outcome file at path, the three lines ReadOutcome
// reads, from getenv's values of SERVICE_RESULT, EXIT_CODE and EXIT_STATUS:
// what an ExecStopPost= command gets from systemd. It writes a temp file
// beside path, syncs it, renames it over path and syncs the directory. It
// refuses a path OutcomeCommand refuses; the values are written as they
// are (ReadOutcome checks them).
//
// It is the one-exec alternative to OutcomeCommand's shell script: the
// unitrun binary runs it as "unitrun daemon write-outcome PATH" (see
// Daemon.OutcomeWriter).
func WriteOutcome(path string, getenv func(string) string) error {
	if _, err := OutcomeCommand(path); err != nil {
		return err
	}
	var b strings.Builder
	for _, k := range outcomeKeys {
		v := getenv(k)
		if strings.ContainsAny(v, "\n\x00") {
			return fmt.Errorf("outcome: %s %q holds a newline or NUL", k, v)
		}
		b.WriteString(k + "=" + v + "\n")
	}
	return atomicfile.Write(path, []byte(b.String()), 0o600)
}

// outcomeArgv returns the argv of the job's ExecStopPost= command that
// writes its outcome file at path: OutcomeCommand's when OutcomeWriter is
// nil, else
//
//	/bin/sh -c "[ -e '<dir>/recorded' ] || exec '<writer>'... '<path>'"
//
// which runs OutcomeWriter followed by path unless the daemon has recorded
// the job already. The daemon releases a job's unit after recording it, so
// that on that common path the stop costs one small shell, not the
// writer. The words are single-quoted for the shell, so neither path nor
// writer may hold a quote, a backslash, a newline, or what OutcomeCommand refuses.
func (d *Daemon) outcomeArgv(path string) ([]string, error) {
	if d.OutcomeWriter == nil {
		return OutcomeCommand(path)
	}
	if _, err := OutcomeCommand(path); err != nil {
		return nil, err
	}
	words := append(append([]string(nil), d.OutcomeWriter...), path)
	for i, w := range words {
		if strings.ContainsAny(w, "$;'\\\n\x00") {
			return nil, fmt.Errorf("outcome writer: word %d %q: must not contain '$', ';', a quote, a backslash, a newline or NUL", i, w)
		}
	}
	script := "[ -e '" + filepath.Join(filepath.Dir(path), recordedFile) + "' ] || exec '" + strings.Join(words, "' '") + "'"
	return []string{"/bin/sh", "-c", script}, nil
}
