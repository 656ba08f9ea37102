package pod

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"time"
)

// logMark is one mark of a times file, as logcopy.TimesWriter writes it
// (the format is logcopy's).
type logMark struct {
	run    bool
	offset int64
	t      time.Time
}

// logMarks reads a times file's marks as it grows.
type logMarks struct {
	f       *os.File // nil if the log has no times file
	r       *bufio.Reader
	partial string
}

// read returns the marks whose line is complete, not yet returned.
func (m *logMarks) read() ([]logMark, error) {
	var marks []logMark
	for m.f != nil {
		s, err := m.r.ReadString('\n')
		m.partial += s
		if err != nil {
			return marks, nil
		}
		line := m.partial
		m.partial = ""
		var kind string
		var off, ns int64
		if _, err := fmt.Sscanf(line, "%s %d %d\n", &kind, &off, &ns); err != nil || (kind != "r" && kind != "w") {
			return marks, fmt.Errorf("%s: mark %q: not \"r|w OFFSET TIME\"", m.f.Name(), strings.TrimSpace(line))
		}
		marks = append(marks, logMark{run: kind == "r", offset: off, t: time.Unix(0, ns)})
	}
	return marks, nil
}
