package logcopy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// An app's log is bounded by rotation. Its copier writes to the live log,
// logs/A.log, with its times file logs/A.times; it renames both to
// logs/A.RUN.PART.log and logs/A.RUN.PART.times (a segment: RUN the run
// it belongs to, PART its place in the run, both counted from 0) as a run
// starts, so that each run begins in a file of its own, and before a
// write would make the two files larger than [Rotation.MaxSize]. A run
// keeps [Rotation.MaxFiles] files at most, the live log counted: the
// copier removes its oldest segments beyond them. As a run starts, its
// copier removes every segment of the runs before the one before it: an
// app keeps its current run's output and its previous one's, each
// bounded. Readers see a consistent set of files by holding a shared
// flock on the logs directory while they list and open them; the copier
// renames and removes under an exclusive one.

// Rotation bounds an app's log, as its pod's manifest says.
type Rotation struct {
	MaxSize  int64 // bytes of a log file and its times file together
	MaxFiles int   // files of a run, the live log counted; 2 or more
}

// DefaultRotation is the bound of the pod manifest's logs field unset, and
// of a pod created before unitrun wrote it.
var DefaultRotation = Rotation{MaxSize: 10 << 20, MaxFiles: 2}

// MinMaxSize is the smallest Rotation.MaxSize: a write and its mark fit.
const MinMaxSize = 4 << 10

// RotationFile is the file in a pod's logs directory that holds the pod's
// Rotation, "MAXSIZE MAXFILES\n".
const RotationFile = "rotation"

// FormatRotation is r as RotationFile holds it.
func FormatRotation(r Rotation) []byte {
	return fmt.Appendf(nil, "%d %d\n", r.MaxSize, r.MaxFiles)
}

// ReadRotation reads the RotationFile of the logs directory dir;
// DefaultRotation if it has none, or none that is valid.
func ReadRotation(dir string) Rotation {
	data, err := os.ReadFile(filepath.Join(dir, RotationFile))
	var r Rotation
	if err != nil {
		return DefaultRotation
	}
	if _, err := fmt.Sscanf(string(data), "%d %d\n", &r.MaxSize, &r.MaxFiles); err != nil || r.MaxSize < MinMaxSize || r.MaxFiles < 2 {
		return DefaultRotation
	}
	return r
}

// A Segment is a rotated file of an app's log.
type Segment struct {
	Path      string // logs/A.RUN.PART.log; its times file is Times(Path)
	Run, Part int
}

// SegmentPath is the path of the segment part of run of the log at path.
func SegmentPath(path string, run, part int) string {
	return fmt.Sprintf("%s.%d.%d.log", strings.TrimSuffix(path, ".log"), run, part)
}

// Segments lists the segments of the log at path, oldest first.
func Segments(path string) ([]Segment, error) {
	dir, base := filepath.Split(path)
	prefix := strings.TrimSuffix(base, ".log") + "."
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var segs []Segment
	for _, e := range entries {
		name, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok {
			continue
		}
		name, ok = strings.CutSuffix(name, ".log")
		runS, partS, ok2 := strings.Cut(name, ".")
		run, err1 := strconv.Atoi(runS)
		part, err2 := strconv.Atoi(partS)
		if !ok || !ok2 || err1 != nil || err2 != nil || run < 0 || part < 0 || SegmentPath(path, run, part) != filepath.Join(dir, e.Name()) {
			continue
		}
		segs = append(segs, Segment{filepath.Join(dir, e.Name()), run, part})
	}
	slices.SortFunc(segs, func(a, b Segment) int {
		if a.Run != b.Run {
			return a.Run - b.Run
		}
		return a.Part - b.Part
	})
	return segs, nil
}

// LockDir takes a flock on the logs directory dir, exclusive for the
// copier, shared for readers, and returns what releases it.
func LockDir(dir string, exclusive bool) (unlock func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err = syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

// startsRun reports whether the times file times begins with the mark of
// a run's start: a file that does not, with a log, continues a run.
func startsRun(times string) bool {
	f, err := os.Open(times)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, 2)
	n, _ := f.Read(b)
	return string(b[:n]) == "r "
}

// rotator rotates the live log at path, as the comment that opens this
// file says.
type rotator struct {
	path string
	r    Rotation
	run  int // the run being copied
}

// startRun renames the live log, if it or its times file holds anything,
// into a segment of the run it belongs to, removes the segments of the
// runs before that one, and sets the run being copied.
func (ro *rotator) startRun() error {
	return ro.locked(func(segs []Segment) error { return ro.startRunLocked(segs) })
}

// locked runs do with the segments, under the exclusive lock.
func (ro *rotator) locked(do func(segs []Segment) error) error {
	unlock, err := LockDir(filepath.Dir(ro.path), true)
	if err != nil {
		return err
	}
	defer unlock()
	segs, err := Segments(ro.path)
	if err != nil {
		return err
	}
	return do(segs)
}

// startRunLocked is startRun under the lock.
func (ro *rotator) startRunLocked(segs []Segment) error {
	last := -1
	if len(segs) > 0 {
		last = segs[len(segs)-1].Run
	}
	prev := last
	if size(ro.path)+size(Times(ro.path)) > 0 {
		// The live log holds a run of its own, or the rest of the last
		// segment's (or, written before segments, one run).
		prev = max(last, 0)
		if startsRun(Times(ro.path)) {
			prev = last + 1
		}
		if err := ro.rename(segs, prev); err != nil {
			return err
		}
	}
	for _, s := range segs {
		if s.Run < prev {
			removeSegment(s.Path)
		}
	}
	ro.run = prev + 1
	return nil
}

// rotate renames the live log into a segment of the run being copied and
// removes the run's oldest segments beyond its bound.
func (ro *rotator) rotate() error {
	return ro.locked(func(segs []Segment) error { return ro.rotateLocked(segs) })
}

// rotateLocked is rotate under the lock.
func (ro *rotator) rotateLocked(segs []Segment) error {
	if err := ro.rename(segs, ro.run); err != nil {
		return err
	}
	segs, err := Segments(ro.path)
	if err != nil {
		return err
	}
	var mine []Segment
	for _, s := range segs {
		if s.Run == ro.run {
			mine = append(mine, s)
		}
	}
	// The live log, created next, is one of the run's files.
	for len(mine)+1 > ro.r.MaxFiles {
		removeSegment(mine[0].Path)
		mine = mine[1:]
	}
	return nil
}

// rename renames the live log and its times file into the next segment
// of run, under the lock.
func (ro *rotator) rename(segs []Segment, run int) error {
	part := 0
	for _, s := range segs {
		if s.Run == run {
			part = s.Part + 1
		}
	}
	seg := SegmentPath(ro.path, run, part)
	if err := os.Rename(ro.path, seg); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.Rename(Times(ro.path), Times(seg)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// removeSegment removes a segment's log and times files.
func removeSegment(path string) {
	os.Remove(path)
	os.Remove(Times(path))
}

// size is the size of the file at path, 0 if it has none.
func size(path string) int64 {
	st, err := os.Lstat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}
