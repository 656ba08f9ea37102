package job

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/godbus/dbus/v5"

	"github.com/unitrun/unitrun/unit"
)

// stdio holds the descriptors handed to a unit and the goroutines that copy
// between pipes and the caller's readers and writers, as os/exec does.
type stdio struct {
	fds [3]*os.File // what the unit gets as fd 0, 1, 2
	set [3]bool     // the streams a property sets instead
	// byPath hands the descriptors to the unit as paths, /proc/PID/fd/N of
	// this process, that systemd opens for each run of the unit, for a
	// unit that may restart: systemd 252 closes the descriptors handed to
	// it once the unit's run ends (the unit is failed for a moment on its
	// way to a restart), and a restarted run's output would go nowhere.
	// A descriptor that a second open(2) would not share (a regular file,
	// whose offset it would not share, or a socket, which cannot be
	// opened) is then put behind a pipe, copied as an io.Writer's is; a
	// pipe or terminal is handed as it is. The unit's ends stay open,
	// for the paths to name them, until the run ends for good. It needs a
	// manager that sees this process (manager.Conn.SharesProcs); elsewhere,
	// and for a pinned run, whose caller may be gone when the unit
	// restarts, the output of a restarted run is lost.
	byPath    bool
	childEnds []*os.File // closed once systemd has its copies
	stdinPipe *os.File   // our end of the stdin pipe, closed after the run
	outPipes  []*os.File // our ends of the output pipes, read to EOF
	copying   sync.WaitGroup
	errMu     sync.Mutex
	copyErr   error
}

// stdStreams begin the names of the properties that set fd 0, 1 and 2 of
// a unit otherwise than by a descriptor of the Cmd's (StandardOutput,
// StandardOutputFile, StandardOutputFileToAppend, StandardInputData, ...).
var stdStreams = [3]string{"StandardInput", "StandardOutput", "StandardError"}

// openStdio prepares the three descriptors; none for a stream that one
// of props sets (StandardOutput=journal, say), which that property
// decides: systemd would take the descriptor over it.
func (s *stdio) openStdio(in io.Reader, out, errw io.Writer, props []unit.Property) error {
	for i, name := range stdStreams {
		if !slices.ContainsFunc(props, func(p unit.Property) bool { return strings.HasPrefix(p.Name, name) }) {
			continue
		}
		s.set[i] = true
		switch i {
		case 0:
			in = nil
		case 1:
			out = nil
		case 2:
			errw = nil
		}
	}
	var err error
	if s.fds[0], err = s.reader(in); err != nil {
		return err
	}
	if s.fds[1], err = s.writer(out); err != nil {
		s.closeAll()
		return err
	}
	if out != nil && errw != nil && interfaceEqual(out, errw) {
		s.fds[2] = s.fds[1]
		return nil
	}
	if s.fds[2], err = s.writer(errw); err != nil {
		s.closeAll()
		return err
	}
	return nil
}

func interfaceEqual(a, b any) (eq bool) {
	defer func() { recover() }() // uncomparable dynamic types are not equal
	return a == b
}

func (s *stdio) reader(r io.Reader) (*os.File, error) {
	if r == nil {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return nil, err
		}
		s.childEnds = append(s.childEnds, f)
		return f, nil
	}
	if f, ok := r.(*os.File); ok && s.handsAsIs(f) {
		return f, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	s.childEnds = append(s.childEnds, pr)
	s.stdinPipe = pw
	go func() {
		// Like os/exec: a command that stops reading is not an error.
		io.Copy(pw, r)
		pw.Close()
	}()
	return pr, nil
}

func (s *stdio) writer(w io.Writer) (*os.File, error) {
	if w == nil {
		f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		s.childEnds = append(s.childEnds, f)
		return f, nil
	}
	if f, ok := w.(*os.File); ok && s.handsAsIs(f) {
		return f, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	s.childEnds = append(s.childEnds, pw)
	s.outPipes = append(s.outPipes, pr)
	s.copying.Add(1)
	go func() {
		defer s.copying.Done()
		if _, err := io.Copy(w, pr); err != nil && !errors.Is(err, os.ErrClosed) {
			s.errMu.Lock()
			s.copyErr = errors.Join(s.copyErr, err)
			s.errMu.Unlock()
		}
	}()
	return pw, nil
}

// handsAsIs reports whether f can be handed to the unit as it is: always,
// unless byPath and a second open of f would not share it (see byPath).
func (s *stdio) handsAsIs(f *os.File) bool {
	if !s.byPath {
		return true
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&(os.ModeNamedPipe|os.ModeCharDevice) != 0
}

// stdioProperties hands the descriptors to systemd, but for the streams
// that a property sets.
func (s *stdio) stdioProperties() []unit.Property {
	var props []unit.Property
	for i, name := range stdStreams {
		switch {
		case s.set[i]:
		case s.byPath:
			props = append(props, unit.Property{Name: name + "File", Value: dbus.MakeVariant(fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), s.fds[i].Fd()))})
		default:
			props = append(props, unit.Property{Name: name + "FileDescriptor", Value: dbus.MakeVariant(dbus.UnixFD(s.fds[i].Fd()))})
		}
	}
	return props
}

// closeAfterStart closes our copies of the unit's ends, so that the output
// pipes reach EOF when the unit's last process closes them; with byPath,
// closeAfterWait closes them, once the run has ended for good.
func (s *stdio) closeAfterStart() {
	if !s.byPath {
		s.closeChildEnds()
	}
}

func (s *stdio) closeChildEnds() {
	for _, f := range s.childEnds {
		f.Close()
	}
	s.childEnds = nil
}

// closeAfterWait closes the stdin pipe, which ends its copy even if the
// command never read it, then waits until the output pipes reach EOF (the
// unit's processes are gone by then) and closes them. It closes the unit's
// ends first, if closeAfterStart left them open.
func (s *stdio) closeAfterWait() {
	s.closeChildEnds()
	if s.stdinPipe != nil {
		s.stdinPipe.Close()
		s.stdinPipe = nil
	}
	s.copying.Wait()
	for _, f := range s.outPipes {
		f.Close()
	}
	s.outPipes = nil
}

// copyError returns what went wrong while copying output to the writers.
func (s *stdio) copyError() error {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.copyErr
}

func (s *stdio) closeAll() {
	s.closeChildEnds()
	if s.stdinPipe != nil {
		s.stdinPipe.Close()
		s.stdinPipe = nil
	}
	for _, f := range s.outPipes {
		f.Close()
	}
	s.outPipes = nil
}
