package store

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// appendTorn writes raw bytes to the job's record file where the next
// version goes, just after its last newline, as a crash in the middle of
// a Put leaves them.
func appendTorn(t *testing.T, s *Store, id, raw string) {
	t.Helper()
	path := filepath.Join(s.Dir(id), recordFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte(raw), nextRecordAt(data)); err != nil {
		t.Fatal(err)
	}
}

// TestRecordVersions checks that each Put of a job after its first appends
// one line to its record file, that Get returns the last, and that a
// version a crash cut short, whatever it left, neither hides the version
// before it nor the one the next Put appends.
func TestRecordVersions(t *testing.T) {
	s := openTestStore(t)
	r := putRecord(t, s, StateQueued, time.Now())
	for _, st := range []State{StateRunning, StateSucceeded} {
		r.State = st
		if err := s.Put(r); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(filepath.Join(s.Dir(r.ID), recordFile))
	if err != nil {
		t.Fatal(err)
	}
	var states []State
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var v Record
		if err := json.Unmarshal(line, &v); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		states = append(states, v.State)
	}
	if len(states) != 3 || states[0] != StateQueued || states[2] != StateSucceeded {
		t.Errorf("record file holds the versions %v, want queued, running, succeeded", states)
	}

	torn := []struct{ name, raw string }{
		{"unfinished line", "\n" + `{"id": "` + r.ID + `", "op": "rebase", "state": "fail`},
		{"zeros where the data was not written", "\n\x00\x00\x00\x00\x00\x00\x00\x00"},
		{"a line ended by a newline whose start was not written", "\n\x00\x00\x00\x00" + `"state": "failed"}` + "\n"},
	}
	for _, tc := range torn {
		t.Run(tc.name, func(t *testing.T) {
			appendTorn(t, s, r.ID, tc.raw)
			if got, err := s.Get(r.ID); err != nil || got.State != r.State {
				t.Fatalf("Get after the torn append = %+v, %v; want the version before it (%s)", got, err, r.State)
			}
			r.Message = tc.name
			if err := s.Put(r); err != nil {
				t.Fatal(err)
			}
			if got, err := s.Get(r.ID); err != nil || got.Message != tc.name {
				t.Errorf("Get after the next Put = %+v, %v; want its version", got, err)
			}
		})
	}
}

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
	}
	for _, tc := range tests {
		r, err := decodeRecord([]byte(tc.data))
		if got := r.Op; err != nil && tc.want != "" || err == nil && got != tc.want {
			t.Errorf("decodeRecord(%q) = op %q, %v; want op %q", tc.data, got, err, tc.want)
		}
	}
}

// FuzzDecodeRecord checks that no record file's contents make
// decodeRecord panic, and that a version written as appendRecord writes
// it (at nextRecordAt), over and before whatever bytes a crash or a
// spare's zeroed room left, is the one it returns.
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
		off := nextRecordAt(file)
		line = append(line, '\n')
		if end := off + int64(len(line)); end > int64(len(file)) {
			file = append(file, make([]byte, end-int64(len(file)))...)
		}
		copy(file[off:], line)
		got, err := decodeRecord(file)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("after %q: %+v, %v; want %+v", data, got, err, want)
		}
	})
}
