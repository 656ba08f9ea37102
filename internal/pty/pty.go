// Package pty gives a command a pseudo-terminal of its own, as
// systemd-run --pty does: unitrun run -t, unitrun pod exec -t and the
// node's kubectl exec -t use it. The command gets the terminal side (a
// unit by TTYPath=, a process as its controlling terminal: Start), and the
// caller copies between its own streams and the master side.
package pty

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// A PTY is a pseudo-terminal pair.
type PTY struct {
	Master *os.File // the side the caller reads and writes
	TTY    *os.File // the command's side, held open until Finish
	Path   string   // the terminal side's path, /dev/pts/N

	restore func() // puts the caller's terminal back as it was
	copied  chan struct{}
}

// Open allocates a terminal pair, 24 rows of 80 columns.
func Open() (*PTY, error) {
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("no pseudo-terminal: %w", err)
	}
	fd := int(master.Fd())
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err == nil {
		err = unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0)
	}
	if err != nil {
		master.Close()
		return nil, fmt.Errorf("no pseudo-terminal: %w", err)
	}
	// 24 rows of 80 columns until Forward or Resize gives it another
	// size, as systemd gives its terminals: a size of 0 would leave the
	// command's output a width of nothing.
	if err := unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 80}); err != nil {
		master.Close()
		return nil, fmt.Errorf("no pseudo-terminal: %w", err)
	}
	p := &PTY{Master: master, Path: fmt.Sprintf("/dev/pts/%d", n), restore: func() {}}
	// Held open until the run ends, so the master reads no hang-up
	// before the command has opened its side.
	if p.TTY, err = os.OpenFile(p.Path, os.O_RDWR|unix.O_NOCTTY, 0); err != nil {
		master.Close()
		return nil, err
	}
	return p, nil
}

// Start starts cmd with the terminal as its stdin, stdout, stderr and
// controlling terminal, in a session it leads.
func (p *PTY) Start(cmd *exec.Cmd) error {
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.TTY, p.TTY, p.TTY
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	return cmd.Start()
}

// Run runs cmd on the terminal (Start), copies as Forward does, waits for
// cmd and finishes; it returns what cmd.Start or cmd.Wait returned.
func (p *PTY) Run(cmd *exec.Cmd, in io.Reader, out io.Writer, input bool) error {
	if err := p.Start(cmd); err != nil {
		p.Finish()
		return err
	}
	p.Forward(in, out, input)
	err := cmd.Wait()
	p.Finish()
	return err
}

// Forward copies the terminal's output to out until Finish and, if input,
// in to the terminal. If in is a terminal, its size is the command's
// terminal's, also after a change, and with input it is put in raw mode
// (cfmakeraw's), as systemd-run puts it, so that every key, Ctrl-C
// included, goes to the command's terminal, and the command's terminal
// alone turns its line ends into CR LF.
func (p *PTY) Forward(in io.Reader, out io.Writer, input bool) {
	p.copied = make(chan struct{})
	go func() {
		io.Copy(out, p.Master) // until EIO: the terminal side is closed everywhere
		close(p.copied)
	}()
	if input {
		go io.Copy(p.Master, in)
	}
	f, ok := in.(*os.File)
	if !ok {
		return
	}
	fd := int(f.Fd())
	p.followSize(fd)
	if !input {
		return
	}
	saved, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return // not a terminal
	}
	raw := *saved
	raw.Oflag &^= unix.OPOST
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	if unix.IoctlSetTermios(fd, unix.TCSETS, &raw) == nil {
		p.restore = func() { unix.IoctlSetTermios(fd, unix.TCSETS, saved) }
	}
}

// followSize gives the command's terminal the size of terminal fd, if it
// is one, now and after each change.
func (p *PTY) followSize(fd int) {
	if _, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ); err != nil {
		return // not a terminal
	}
	resize := func() {
		if ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ); err == nil {
			unix.IoctlSetWinsize(int(p.Master.Fd()), unix.TIOCSWINSZ, ws)
		}
	}
	resize()
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	go func() {
		for range winch {
			resize()
		}
	}()
}

// Resize gives the command's terminal width columns and height rows.
func (p *PTY) Resize(width, height uint16) error {
	return unix.IoctlSetWinsize(int(p.Master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: width, Row: height})
}

// Finish copies what the command left on its terminal, once it has
// ended, and puts the caller's terminal back.
func (p *PTY) Finish() {
	p.TTY.Close()
	if p.copied != nil {
		<-p.copied
	}
	p.Master.Close()
	p.restore()
}
