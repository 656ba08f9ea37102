package store

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// appendTorn writes raw bytes to the log where the next line goes, as a
// crash in the middle of a Put, or a write a full disk cut short, leaves
// them: the Store does not know of them.
func appendTorn(t *testing.T, s *Store, raw string) {
	t.Helper()
	if _, err := s.log.WriteAt([]byte(raw), s.end); err != nil {
		t.Fatal(err)
	}
}

// TestRecordVersions checks that each Put of a job appends one line to
// the log, that Get returns the last, and that a version a crash or a
// full disk cut short, whatever it left, neither hides the version before
// it, in the Store that wrote it or one opened after, nor the one the next
// Put appends.
func TestRecordVersions(t *testing.T) {
	s := openTestStore(t)
	r := putRecord(t, s, StateQueued, time.Now())
	for _, st := range []State{StateRunning, StateSucceeded} {
		r.State = st
		if err := s.Put(r); err != nil {
			t.Fatal(err)
		}
	}
	var states []State
	for _, line := range logLines(t, s) {
		v, err := decodeLine([]byte(line))
		if err != nil || v.Rec == nil {
			t.Fatalf("line %q: %v", line, err)
		}
		states = append(states, v.Rec.State)
	}
	if len(states) != 3 || states[0] != StateQueued || states[2] != StateSucceeded {
		t.Errorf("the log holds the versions %v, want queued, running, succeeded", states)
	}

	torn := []struct{ name, raw string }{
		{"unfinished line", `{"rec": {"id": "` + r.ID + `", "op": "rebase", "state": "fail`},
		{"zeros where the data was not written", "\x00\x00\x00\x00\x00\x00\x00\x00"},
		{"a line ended by a newline whose start was not written", "\x00\x00\x00\x00" + `"state": "failed"}}` + "\n"},
		{"a long line cut short", `{"rec": {"id": "` + r.ID + `", "op": "rebase", "state": "failed", "message": "` + strings.Repeat("x", 4096)},
	}
	for _, tc := range torn {
		t.Run(tc.name, func(t *testing.T) {
			appendTorn(t, s, tc.raw)
			if got, err := s.Get(r.ID); err != nil || got.State != r.State {
				t.Fatalf("Get after the torn append = %+v, %v; want the version before it (%s)", got, err, r.State)
			}
			s = reopen(t, s)
			if got, err := s.Get(r.ID); err != nil || got.State != r.State || got.Message != r.Message {
				t.Fatalf("Get after the torn append, reopened = %+v, %v; want the version before it", got, err)
			}
			r.Message = tc.name
			if err := s.Put(r); err != nil {
				t.Fatal(err)
			}
			if got, err := s.Get(r.ID); err != nil || got.Message != tc.name {
				t.Errorf("Get after the next Put = %+v, %v; want its version", got, err)
			}
			s = reopen(t, s)
			if got, err := s.Get(r.ID); err != nil || got.Message != tc.name {
				t.Errorf("Get after the next Put, reopened = %+v, %v; want its version", got, err)
			}
		})
	}
}

// FuzzLoad checks that no log's contents make the scanner panic, that
// each record it indexes is a line of the log, that where it says the
// next line goes is the end of a line that decodes, and that a line
// written there, over whatever bytes a crash or a full disk left, is the
// job's current record.
func FuzzLoad(f *testing.F) {
	rec := string(appendLine(nil, []byte(`{"rec": {"id": "20261202T142501Z-0123abcd", "op": "a", "state": "running"}}`)))
	started := string(appendLine(nil, []byte(`{"started": "20261202T142501Z-0123abcd"}`)))
	f.Add([]byte(rec))
	f.Add([]byte(rec + started + `0000 {"rec": {"id": "2026`))
	f.Add([]byte(rec + string(appendLine(nil, []byte(`{"rm": "20261202T142501Z-0123abcd"}`))) + "\x00\x00"))
	f.Add([]byte("\x00\x00\n{}\n[]\nnull\n" + rec))
	f.Fuzz(func(t *testing.T, data []byte) {
		x := newIndex()
		sc := scanner{x: &x}
		sc.scan(data, 0)
		end := sc.end
		if end > int64(len(data)) || end > 0 && data[end-1] != '\n' {
			t.Fatalf("scan(%q): next line at %d, not the end of a line", data, end)
		}
		if end > 0 {
			if _, err := decodeLine(data[bytes.LastIndexByte(data[:end-1], '\n')+1 : end-1]); err != nil {
				t.Fatalf("scan(%q): next line at %d, after a line that does not decode: %v", data, end, err)
			}
		}
		for id, e := range x.recs {
			if e.off < 0 || e.off+int64(e.n) >= int64(len(data)) || data[e.off+int64(e.n)] != '\n' {
				t.Fatalf("record %s at %d+%d: not a line of %q", id, e.off, e.n, data)
			}
		}
		line, err := encodeLine(&logLine{Rec: &Record{ID: "20261202T142501Z-0123abcd", Op: "op\n\"}", State: StateFailed, Message: string(data)}})
		if err != nil {
			t.Fatal(err)
		}
		want, err := decodeLine(line[:len(line)-1]) // the record as it reads back (invalid UTF-8 made U+FFFD)
		if err != nil {
			t.Fatal(err)
		}
		file := append(bytes.Clone(data[:end]), line...)
		if rest := end + int64(len(line)); rest < int64(len(data)) {
			file = append(file, data[rest:]...)
		}
		x = newIndex()
		(&scanner{x: &x}).scan(file, 0)
		e, ok := x.recs[want.Rec.ID]
		var got logLine
		if ok {
			got, err = decodeLine(file[e.off : e.off+int64(e.n)])
		}
		if !ok || err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("after %q: %+v, %v; want %+v", data, got.Rec, ok, want.Rec)
		}
	})
}

// TestDecodeRecord reads record files of version 1 (see migrate).
func TestDecodeRecord(t *testing.T) {
	tests := []struct {
		data string
		want string // the op of the record returned, "" for an error
	}{
		{"", ""},
		{"\n\n", ""},
		{`{"op": "a"}`, ""},
		{`{"op": "a"}` + "\n", "a"},
		{`{"op": "a"}` + "\n\n" + `{"op": "b"}` + "\n", "b"},
		{`{"op": "a"}` + "\n\n" + `{"op": "b"`, "a"},
		{`{"op": "a"}` + "\n\n" + `{"op": "b"` + "\n", "a"},
		{`{"op": "a"}` + "\n" + `{"op": "b"` + "\n" + `{"op": "c"}` + "\n\n", "c"},
		{"{not json\n", ""},
		{`{"op": "a"}` + "\n\x00\x00\x00\x00", "a"},
	}
	for _, tc := range tests {
		r, err := decodeRecord([]byte(tc.data))
		if got := r.Op; err != nil && tc.want != "" || err == nil && got != tc.want {
			t.Errorf("decodeRecord(%q) = op %q, %v; want op %q", tc.data, got, err, tc.want)
		}
	}
}

// FuzzDecodeRecord checks that no record file of version 1 makes
// decodeRecord panic, and that a version written as version 1 wrote it
// (just after the last newline), over and before whatever bytes a crash
// or a spare's zeroed room left, is the one it returns.
func FuzzDecodeRecord(f *testing.F) {
	f.Add([]byte(`{"id": "x", "op": "a", "state": "running"}` + "\n"))
	f.Add([]byte(`{"op": "a"}` + "\n\n" + `{"op": "b`))
	f.Add([]byte("\x00\x00\n"))
	f.Add(append([]byte(`{"id": "x", "op": "a", "state": "running"}`+"\n"+`{"op": "torn, longer than the next version`), make([]byte, 64)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		decodeRecord(data)
		line, err := json.Marshal(&Record{ID: "20261202T142501Z-0123abcd", Op: "op\n\"}", State: StateFailed, Message: string(data)})
		if err != nil {
			t.Fatal(err)
		}
		var want Record
		if err := json.Unmarshal(line, &want); err != nil {
			t.Fatal(err)
		}
		file := bytes.Clone(data)
		off := bytes.LastIndexByte(file, '\n') + 1
		line = append(line, '\n')
		if end := off + len(line); end > len(file) {
			file = append(file, make([]byte, end-len(file))...)
		}
		copy(file[off:], line)
		got, err := decodeRecord(file)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("after %q: %+v, %v; want %+v", data, got, err, want)
		}
	})
}

// TestLoadLongLines reopens a log whose lines are longer than what load
// reads at a time, and one that ends inside a long line: every record
// reads back whole.
func TestLoadLongLines(t *testing.T) {
	s := openTestStore(t)
	var recs []*Record
	for i := range 3 {
		r := &Record{ID: s.NewID(), Op: "rebase", State: StateSucceeded, OutputTail: strings.Repeat(string(rune('a'+i)), 1536<<10)}
		if err := s.Put(r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	appendTorn(t, s, `{"rec": {"id": "`+recs[0].ID+`", "op": "x", "state": "failed", "output_tail": "`+strings.Repeat("z", 1<<20))
	s = reopen(t, s)
	for _, r := range recs {
		if got, err := s.Get(r.ID); err != nil || !reflect.DeepEqual(got, r) {
			t.Errorf("Get(%s) after reopening: %v; want the record put, with its %d bytes of tail", r.ID, err, len(r.OutputTail))
		}
	}
}
