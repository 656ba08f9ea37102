package systemdtest

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Journal is a datagram socket that a test binds in place of journald's
// native socket (/run/systemd/journal/socket), to read the entries a
// program sends there. The test machines run no journald.
type Journal struct {
	Path string // the socket
	conn *net.UnixConn
}

// ListenJournal binds a Journal in a temp dir, closed when the test ends.
func ListenJournal(t testing.TB) *Journal {
	t.Helper()
	path := filepath.Join(t.TempDir(), "journal.socket")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &Journal{Path: path, conn: conn}
}

// Next reads the next entry, from a datagram or from the memfd it carries,
// and decodes its fields. It fails the test when none comes within 30s,
// when the entry is malformed, or when a memfd is not sealed for writes.
func (j *Journal) Next(t testing.TB) map[string]string {
	t.Helper()
	buf, oob := make([]byte, 1<<20), make([]byte, 1024)
	j.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	n, oobn, _, _, err := j.conn.ReadMsgUnix(buf, oob)
	if err != nil {
		t.Fatalf("journal entry: %v", err)
	}
	data := buf[:n]
	if oobn > 0 {
		data = readPassedFile(t, oob[:oobn])
	}
	return decodeEntry(t, data)
}

// readPassedFile returns the contents of the memfd passed in oob.
func readPassedFile(t testing.TB, oob []byte) []byte {
	t.Helper()
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("journal entry: control messages: %v, %d", err, len(msgs))
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		t.Fatalf("journal entry: rights: %v, %v", err, fds)
	}
	f := os.NewFile(uintptr(fds[0]), "entry")
	defer f.Close()
	seals, err := unix.FcntlInt(f.Fd(), unix.F_GET_SEALS, 0)
	if err != nil || seals&unix.F_SEAL_WRITE == 0 {
		t.Errorf("journal entry: memfd seals %#x, %v: want F_SEAL_WRITE among them", seals, err)
	}
	// The offset is where the sender's writes left it; journald reads from
	// the start, as this does.
	data, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<30))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// decodeEntry parses an entry of the journal's native protocol
// ("NAME=value\n", or "NAME\n", a 64-bit little-endian length, the value
// and "\n"), failing the test on a malformed entry or a repeated field.
func decodeEntry(t testing.TB, data []byte) map[string]string {
	t.Helper()
	fields := make(map[string]string)
	for len(data) > 0 {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			t.Fatalf("journal entry: line without newline: %q", data)
		}
		line := string(data[:nl])
		data = data[nl+1:]
		name, value, ok := strings.Cut(line, "=")
		if !ok {
			if len(data) < 8 {
				t.Fatalf("journal entry: field %s: no length", name)
			}
			n := binary.LittleEndian.Uint64(data)
			if uint64(len(data)) < 8+n+1 || data[8+n] != '\n' {
				t.Fatalf("journal entry: field %s: length %d runs past the entry", name, n)
			}
			value = string(data[8 : 8+n])
			data = data[8+n+1:]
		}
		if _, dup := fields[name]; dup {
			t.Fatalf("journal entry: field %s twice", name)
		}
		fields[name] = value
	}
	return fields
}
