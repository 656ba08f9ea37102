package api

import (
	"reflect"
	"testing"
)

func TestParseRequest(t *testing.T) {
	tests := []struct {
		name    string
		pkt     string
		limit   int
		op      string
		args    []string
		wantErr string
	}{
		{"op only", "reboot", 64, "reboot", []string{}, ""},
		{"op with trailing NUL", "reboot\x00", 64, "reboot", []string{}, ""},
		{"args", "rebase\x00quay.io/x:1\x00--y", 64, "rebase", []string{"quay.io/x:1", "--y"}, ""},
		{"args with trailing NUL", "rebase\x00a\x00b\x00", 64, "rebase", []string{"a", "b"}, ""},
		{"empty last arg", "op\x00\x00", 64, "op", []string{""}, ""},
		{"empty args in the middle", "op\x00\x00\x00x\x00", 64, "op", []string{"", "", "x"}, ""},
		{"exactly the limit", "op\x00ab", 5, "op", []string{"ab"}, ""},
		{"over the limit", "op\x00abc", 5, "", nil, "request: packet of 6 bytes is larger than the limit of 5"},
		{"empty packet", "", 64, "", nil, "request: empty packet"},
		{"only a NUL", "\x00", 64, "", nil, "request: op name is empty"},
		{"empty op name", "\x00arg", 64, "", nil, "request: op name is empty"},
		{"op not UTF-8", "o\xffp", 64, "", nil, "request: op name is not valid UTF-8"},
		{"arg not UTF-8", "op\x00ok\x00\xc3", 64, "", nil, "request: arg 1 is not valid UTF-8"},
		{"two trailing NULs keep one empty arg", "op\x00a\x00\x00", 64, "op", []string{"a", ""}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op, args, err := ParseRequest([]byte(tt.pkt), tt.limit)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if op != tt.op || !reflect.DeepEqual(args, tt.args) {
				t.Errorf("got %q %q, want %q %q", op, args, tt.op, tt.args)
			}
		})
	}
}

func TestEncodeRequest(t *testing.T) {
	tests := []struct {
		op      string
		args    []string
		want    string
		wantErr string
	}{
		{"reboot", nil, "reboot\x00", ""},
		{"rebase", []string{"a", ""}, "rebase\x00a\x00\x00", ""},
		{"", nil, "", "request: op name is empty"},
		{"o\x00p", nil, "", "request: op name contains NUL"},
		{"op", []string{"a", "b\x00"}, "", "request: arg 1 contains NUL"},
		{"op", []string{"\xff"}, "", "request: arg 0 is not valid UTF-8"},
	}
	for _, tt := range tests {
		pkt, err := EncodeRequest(tt.op, tt.args)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("EncodeRequest(%q, %q): err = %v, want %q", tt.op, tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil || string(pkt) != tt.want {
			t.Errorf("EncodeRequest(%q, %q) = %q, %v; want %q", tt.op, tt.args, pkt, err, tt.want)
		}
	}
}

func TestResponse(t *testing.T) {
	tests := []struct {
		name    string
		pkt     string
		ok      bool
		id, msg string
		wantErr string
	}{
		{"ok", "ok\x0020261202T142501Z-0123abcd\x00exited with status 0", true, "20261202T142501Z-0123abcd", "exited with status 0", ""},
		{"error without job", "error\x00\x00unknown op \"x\"", false, "", "unknown op \"x\"", ""},
		{"trailing NUL", "error\x00id\x00killed by signal KILL\x00", false, "id", "killed by signal KILL", ""},
		{"empty message", "ok\x00id\x00", true, "id", "", ""},
		{"ok without job", "ok\x00\x00done", false, "", "", `response: status "ok" without a job id`},
		{"bad status", "fine\x00id\x00m", false, "", "", `response: status "fine" is neither "ok" nor "error"`},
		{"too few", "ok\x00id", false, "", "", "response: 2 strings, want 3 (status, job id, message)"},
		{"too many", "ok\x00id\x00m\x00x", false, "", "", "response: 4 strings, want 3 (status, job id, message)"},
		{"empty", "", false, "", "", "response: 1 strings, want 3 (status, job id, message)"},
		{"not UTF-8", "ok\x00id\x00\xff", false, "", "", "response: not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, id, msg, err := ParseResponse([]byte(tt.pkt))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || ok != tt.ok || id != tt.id || msg != tt.msg {
				t.Errorf("got %v %q %q %v, want %v %q %q", ok, id, msg, err, tt.ok, tt.id, tt.msg)
			}
		})
	}
}

func TestEncodeResponse(t *testing.T) {
	tests := []struct {
		ok      bool
		id, msg string
		want    string
		wantMsg string
	}{
		{true, "id", "exited with status 0", "ok\x00id\x00exited with status 0", "exited with status 0"},
		{false, "", "unknown op", "error\x00\x00unknown op", "unknown op"},
		{false, "id", "bad\x00output\xff", "error\x00id\x00bad output\uFFFD", "bad output\uFFFD"},
	}
	for _, tt := range tests {
		pkt := EncodeResponse(tt.ok, tt.id, tt.msg)
		if string(pkt) != tt.want {
			t.Errorf("EncodeResponse(%v, %q, %q) = %q, want %q", tt.ok, tt.id, tt.msg, pkt, tt.want)
		}
		ok, id, msg, err := ParseResponse(pkt)
		if err != nil || ok != tt.ok || id != tt.id || msg != tt.wantMsg {
			t.Errorf("ParseResponse(%q) = %v %q %q %v", pkt, ok, id, msg, err)
		}
	}
}

// FuzzParseRequest checks that ParseRequest never panics, that what it
// accepts survives EncodeRequest and ParseRequest unchanged, and that a
// packet it refuses is not one EncodeRequest can produce from its fields.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{"reboot", "rebase\x00quay.io/x:1\x00", "op\x00\x00", "\x00", "o\xffp", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, pkt []byte) {
		const limit = 1 << 16
		op, args, err := ParseRequest(pkt, limit)
		if err != nil {
			return
		}
		enc, err := EncodeRequest(op, args)
		if err != nil {
			t.Fatalf("EncodeRequest refuses what ParseRequest returned from %q: %v", pkt, err)
		}
		op2, args2, err := ParseRequest(enc, limit+1)
		if err != nil || op2 != op || !reflect.DeepEqual(args2, args) {
			t.Fatalf("round trip of %q: %q %q %v, want %q %q", pkt, op2, args2, err, op, args)
		}
	})
}
