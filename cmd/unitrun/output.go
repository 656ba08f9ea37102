package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

// term describes where a command writes: a terminal, which gets aligned
// tables with a header and, unless NO_COLOR is set or TERM is dumb,
// colored states; or anything else (a pipe, a file), which gets plain
// tab-separated lines with no header and no escape sequences.
type term struct {
	w      io.Writer
	tty    bool // w is a terminal
	color  bool // states are colored
	cursor bool // the terminal moves its cursor (TERM is not dumb)
	width  int  // columns of the terminal; 0 if unknown or not a terminal
}

// newTerm inspects w: a terminal is a file (an *os.File, or main's
// countingWriter of stdout) whose descriptor answers the termios ioctl.
func newTerm(w io.Writer) *term {
	t := &term{w: w}
	f, ok := w.(interface{ Fd() uintptr })
	if !ok {
		return t
	}
	if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err != nil {
		return t
	}
	t.tty = true
	t.cursor = os.Getenv("TERM") != "dumb"
	t.color = os.Getenv("NO_COLOR") == "" && t.cursor
	if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil {
		t.width = int(ws.Col)
	}
	return t
}

// ANSI colors of states.
const (
	green  = "\x1b[32m"
	red    = "\x1b[31m"
	yellow = "\x1b[33m"
	reset  = "\x1b[0m"
)

// stateColor is the color of a state word: green for success and running,
// red for failure, yellow for waiting; "" for anything else.
func stateColor(s string) string {
	switch strings.ToLower(s) {
	case "running", "succeeded", "exited", "success", "active", "yes":
		return green
	case "failed", "canceled", "no":
		return red
	case "queued", "waiting", "pending", "restarting", "activating":
		return yellow
	}
	return ""
}

// paint colors s as the state it names, if t colors.
func (t *term) paint(s string) string {
	if c := stateColor(s); t.color && c != "" {
		return c + s + reset
	}
	return s
}

// table prints rows under header, with tabs and newlines inside a cell
// turned into spaces. On a terminal the columns are aligned, the header
// comes first and the cells of column stateCol (-1 for none) are colored;
// elsewhere each row is one line of tab-separated cells, an empty cell
// printed as "-", and no header.
func (t *term) table(header []string, rows [][]string, stateCol int) error {
	var b strings.Builder
	flat := strings.NewReplacer("\t", " ", "\n", " ")
	all := [][]string{header}
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = flat.Replace(c)
		}
		all = append(all, cells)
	}
	if !t.tty {
		for _, r := range all[1:] {
			for i, c := range r {
				if c == "" {
					r[i] = "-" // a script's field splitting keeps the column
				}
			}
			b.WriteString(strings.Join(r, "\t"))
			b.WriteByte('\n')
		}
		_, err := io.WriteString(t.w, b.String())
		return err
	}
	widths := make([]int, len(header))
	for _, r := range all {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for n, r := range all {
		for i, c := range r {
			pad := widths[i] - utf8.RuneCountInString(c)
			if i == stateCol && n > 0 {
				c = t.paint(c)
			}
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", pad+2))
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(t.w, b.String())
	return err
}

// printJSON writes v as one indented JSON value.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return &exitError{code: exitFailed, err: fmt.Errorf("print JSON: %w", err)}
	}
	return nil
}

// printLine prints v as JSON on one line, the form of what run, start and
// wait print.
func printLine(w io.Writer, v any) error {
	if err := json.NewEncoder(w).Encode(v); err != nil {
		return &exitError{code: exitFailed, err: fmt.Errorf("print JSON: %w", err)}
	}
	return nil
}

// jsonFlag adds --json to cmd.
func jsonFlag(cmd *cobra.Command, p *bool, usage string) {
	cmd.Flags().BoolVar(p, "json", false, usage)
}
