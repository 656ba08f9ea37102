package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/unitrun/unitrun/unit"
)

// pty is a pseudo-terminal for a unit, as systemd-run --pty gives one:
// the unit opens its terminal by TTYPath= with StandardInput=tty and
// StandardOutput=tty, StandardError=tty, so systemd makes it the command's
// controlling terminal, and unitrun copies between its own streams and the
// terminal's master side.
type pty struct {
	master, tty *os.File
	path        string
	restore     func() // puts the caller's terminal back as it was
	copied      chan struct{}
}

// openPTY allocates a terminal pair whose terminal side the unit gets.
func openPTY() (*pty, error) {
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("--pty: no pseudo-terminal: %w", err)
	}
	fd := int(master.Fd())
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err == nil {
		err = unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0)
	}
	if err != nil {
		master.Close()
		return nil, fmt.Errorf("--pty: no pseudo-terminal: %w", err)
	}
	p := &pty{master: master, path: fmt.Sprintf("/dev/pts/%d", n), restore: func() {}}
	// Held open until the run ends, so the master reads no hang-up
	// before the unit has opened its side.
	if p.tty, err = os.OpenFile(p.path, os.O_RDWR|unix.O_NOCTTY, 0); err != nil {
		master.Close()
		return nil, fmt.Errorf("--pty: %w", err)
	}
	return p, nil
}

// properties are the unit's settings that give it the terminal.
func (p *pty) properties() []unit.Property {
	var props []unit.Property
	for _, a := range []string{"TTYPath=" + p.path, "StandardInput=tty", "StandardOutput=tty", "StandardError=tty"} {
		ps, err := unit.ParseProperty(a)
		if err != nil {
			panic(err) // the assignments above are valid
		}
		props = append(props, ps...)
	}
	return props
}

// forward copies in to the terminal and the terminal's output to out
// until finish. If in is a terminal, it is put in raw mode (cfmakeraw's),
// as systemd-run puts it, so that every key, Ctrl-C included, goes to the
// command's terminal, and the command's terminal alone turns its line
// ends into CR LF; and its size is the command's terminal's, also after a
// change.
func (p *pty) forward(in *os.File, out io.Writer) {
	p.copied = make(chan struct{})
	go func() {
		io.Copy(out, p.master) // until EIO: the terminal side is closed everywhere
		close(p.copied)
	}()
	go io.Copy(p.master, in)
	fd := int(in.Fd())
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
	resize := func() {
		if ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ); err == nil {
			unix.IoctlSetWinsize(int(p.master.Fd()), unix.TIOCSWINSZ, ws)
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

// finish, once the unit's run has ended, copies what the command left on
// its terminal and puts the caller's terminal back.
func (p *pty) finish() {
	p.tty.Close()
	if p.copied != nil {
		<-p.copied
	}
	p.master.Close()
	p.restore()
}
