package unit

import (
	"math"
	"strings"
	"testing"
	"time"
)

// timeSpanTests are checked here, against systemd-analyze timespan in
// systemd_test.go and against parse_sec in oracle_test.go. usec is the span
// in microseconds; err marks spans systemd refuses.
var timeSpanTests = []struct {
	in   string
	usec uint64
	err  bool
}{
	{"5", 5e6, false},
	{"5s", 5e6, false},
	{"0", 0, false},
	{"1min 30s", 90e6, false},
	{"1min30s", 90e6, false},
	{"250ms", 250e3, false},
	{"2h", 7200e6, false},
	{"1.5h", 5400e6, false},
	{".5", 5e5, false},
	{"1 d 2h", 93600e6, false},
	{" 3 seconds ", 3e6, false},
	{"1y", 31557600e6, false},
	{"1M", 2629800e6, false},
	{"1w", 604800e6, false},
	{"1m", 60e6, false},
	{"1msec", 1e3, false},
	{"7us", 7, false},
	{"7μs", 7, false},
	{"7µs", 7, false},
	{"1.000001s", 1000001, false},
	{"0.1234567s", 123456, false},
	{"+5", 5e6, false},
	{"12.34 .56", 12900000, false},
	{"12.34s.56", 12900000, false},
	{"infinity", Infinity, false},
	{" infinity ", Infinity, false},
	{"", 0, true},
	{"   ", 0, true},
	{"-1", 0, true},
	{"-0", 0, true},
	{"5x", 0, true},
	{"5 x", 0, true},
	{"12.34.56", 0, true},
	{"3.", 0, true},
	{"3.sec", 0, true},
	{"3. 1", 0, true},
	{"0x10", 0, true},
	{"infinity5", 0, true},
	{"5 infinity", 0, true},
	{"s", 0, true},
	{"18446744073709551615us", 0, true},
	{"584942417356y", 0, true},
}

func TestParseTimeSpan(t *testing.T) {
	for _, tt := range timeSpanTests {
		usec, err := parseSec(tt.in)
		if (err != nil) != tt.err || usec != tt.usec && !tt.err {
			t.Errorf("parseSec(%q) = %d, %v, want %d (error: %v)", tt.in, usec, err, tt.usec, tt.err)
		}
	}
	tests := []struct {
		in  string
		d   time.Duration
		err string
	}{
		{"1min 30s", 90 * time.Second, ""},
		{"250ms", 250 * time.Millisecond, ""},
		{"7us", 7 * time.Microsecond, ""},
		{"infinity", math.MaxInt64, ""},
		{"292y", 292 * 31557600 * time.Second, ""},
		{"293y", 0, `time span "293y": longer than the largest time.Duration`},
		{"5x", 0, `time span "5x": not a time span (examples: 5, 5s, 1min 30s, 250ms, infinity)`},
		{"18446744073709551615us", 0, `time span "18446744073709551615us": out of range`},
	}
	for _, tt := range tests {
		d, err := ParseTimeSpan(tt.in)
		if tt.err == "" {
			if err != nil || d != tt.d {
				t.Errorf("ParseTimeSpan(%q) = %v, %v, want %v", tt.in, d, err, tt.d)
			}
		} else if err == nil || err.Error() != tt.err {
			t.Errorf("ParseTimeSpan(%q) = %v, %v, want error %q", tt.in, d, err, tt.err)
		}
	}
}

// sizeTests are checked here and against parse_size in oracle_test.go.
var sizeTests = []struct {
	in   string
	size uint64
	err  bool
}{
	{"0", 0, false},
	{"4096", 4096, false},
	{"100K", 100 << 10, false},
	{"512M", 512 << 20, false},
	{"1G", 1 << 30, false},
	{"2T", 2 << 40, false},
	{"1P", 1 << 50, false},
	{"1E", 1 << 60, false},
	{"15E", 15 << 60, false},
	{"1.5G", 3 << 29, false},
	{"0.5K", 512, false},
	{"1.K", 1024, false},
	{"1G 512M", 1<<30 + 512<<20, false},
	{"1G512M", 1<<30 + 512<<20, false},
	{"5B", 5, false},
	{" 7 K", 7 << 10, false},
	{" 7 K ", 0, true},
	{"+5", 5, false},
	{"1.000000001G", 1<<30 + 1, false},
	{"18446744073709551615", math.MaxUint64, false},
	{"", 0, true},
	{"K", 0, true},
	{"-1", 0, true},
	{"1X", 0, true},
	{"1k", 0, true},
	{"512M 1G", 0, true},
	{"1G 1G", 0, true},
	{"16E", 0, true},
	{"18446744073709551616", 0, true},
	{"infinity", 0, true},
	{"50%", 0, true},
	{"0x10", 0, true},
}

func TestParseSize(t *testing.T) {
	for _, tt := range sizeTests {
		n, err := ParseSize(tt.in)
		if (err != nil) != tt.err || n != tt.size {
			t.Errorf("ParseSize(%q) = %d, %v, want %d (error: %v)", tt.in, n, err, tt.size, tt.err)
		}
	}
	for in, want := range map[string]string{
		"1X":  `size "1X": not a size (examples: 4096, 100K, 512M, 1.5G)`,
		"16E": `size "16E": out of range`,
	} {
		if _, err := ParseSize(in); err == nil || err.Error() != want {
			t.Errorf("ParseSize(%q) = %v, want %q", in, err, want)
		}
	}
}

func TestCNumbers(t *testing.T) {
	atoi := []struct {
		in  string
		n   int32
		err error
	}{
		{"0", 0, nil},
		{"42", 42, nil},
		{" \t42", 42, nil},
		{"+42", 42, nil},
		{"-42", -42, nil},
		{"010", 8, nil},
		{"0x1f", 31, nil},
		{"0X1F", 31, nil},
		{"0b101", 5, nil},
		{"0o17", 15, nil},
		{"0B1", 1, nil},
		{"-0x10", -16, nil},
		{"2147483647", math.MaxInt32, nil},
		{"-2147483648", math.MinInt32, nil},
		{"2147483648", 0, errRange},
		{"99999999999999999999", 0, errRange},
		{"", 0, errSyntax},
		{"42 ", 0, errSyntax},
		{"4 2", 0, errSyntax},
		{"0x", 0, errSyntax},
		{"09", 0, errSyntax},
		{"0b2", 0, errSyntax},
		{"+0b1", 0, errSyntax},
		{"abc", 0, errSyntax},
	}
	for _, tt := range atoi {
		n, err := safeAtoi(tt.in)
		if err != tt.err || n != tt.n {
			t.Errorf("safeAtoi(%q) = %d, %v, want %d, %v", tt.in, n, err, tt.n, tt.err)
		}
	}
	atou := []struct {
		in         string
		base, bits int
		refuseSign bool
		n          uint64
		err        error
	}{
		{"18446744073709551615", 0, 64, false, math.MaxUint64, nil},
		{"18446744073709551616", 0, 64, false, 0, errRange},
		{"-0", 0, 64, false, 0, nil},
		{"-1", 0, 64, false, 0, errRange},
		{" 7", 0, 64, false, 7, nil},
		{"0x10", 0, 64, false, 16, nil},
		{"255", 0, 8, false, 255, nil},
		{"256", 0, 8, false, 0, errRange},
		{"4294967296", 0, 32, false, 0, errRange},
		{"0022", 8, 32, true, 0o22, nil},
		{"777", 8, 32, true, 0o777, nil},
		{"8", 8, 32, true, 0, errSyntax},
		{"+22", 8, 32, true, 0, errSyntax},
		{"-0", 8, 32, true, 0, errSyntax},
		{"0o22", 8, 32, true, 0, errSyntax},
	}
	for _, tt := range atou {
		n, err := safeAtou(tt.in, tt.base, tt.bits, tt.refuseSign)
		if err != tt.err || n != tt.n {
			t.Errorf("safeAtou(%q, %d, %d, %v) = %d, %v, want %d, %v", tt.in, tt.base, tt.bits, tt.refuseSign, n, err, tt.n, tt.err)
		}
	}
}

func TestParsePermyriad(t *testing.T) {
	tests := []struct {
		in  string
		p   int
		err bool
	}{
		{"50%", 5000, false},
		{"0%", 0, false},
		{"100%", 10000, false},
		{"150%", 15000, false},
		{"12.5%", 1250, false},
		{"12.34%", 1234, false},
		{" 5%", 500, false},
		{"010%", 800, false},
		{"5‰", 50, false},
		{"5.5‰", 55, false},
		{"5‱", 5, false},
		{"12.345%", 0, true},
		{"12.%", 0, true},
		{"12.x%", 0, true},
		{"5.55‰", 0, true},
		{"-5%", 0, true},
		{"%", 0, true},
		{"50", 0, true},
		{"50 %", 0, true},
		{"5.5‱", 0, true},
	}
	for _, tt := range tests {
		p, err := parsePermyriad(tt.in)
		if (err != nil) != tt.err || p != tt.p {
			t.Errorf("parsePermyriad(%q) = %d, %v, want %d (error: %v)", tt.in, p, err, tt.p, tt.err)
		}
	}
}

func TestSignalFromString(t *testing.T) {
	tests := []struct {
		in  string
		n   int32
		err bool
	}{
		{"SIGTERM", 15, false},
		{"TERM", 15, false},
		{"SIGKILL", 9, false},
		{"HUP", 1, false},
		{"SIGSTKFLT", 16, false},
		{"SIGPWR", 30, false},
		{"SYS", 31, false},
		{"9", 9, false},
		{"64", 64, false},
		{"010", 8, false},
		{"RTMIN", 34, false},
		{"SIGRTMIN+3", 37, false},
		{"RTMIN+30", 64, false},
		{"RTMAX", 64, false},
		{"SIGRTMAX-2", 62, false},
		{"RTMAX-30", 34, false},
		{"0", 0, true},
		{"65", 0, true},
		{"-9", 0, true},
		{"sigterm", 0, true},
		{"SIG", 0, true},
		{"SIGSIGTERM", 0, true},
		{"RTMIN+31", 0, true},
		{"RTMIN-1", 0, true},
		{"RTMAX-31", 0, true},
		{"RTMAX+1", 0, true},
		{"IOT", 0, true},
	}
	for _, tt := range tests {
		n, err := signalFromString(tt.in)
		if (err != nil) != tt.err || n != tt.n {
			t.Errorf("signalFromString(%q) = %d, %v, want %d (error: %v)", tt.in, n, err, tt.n, tt.err)
		}
	}
}

func TestParseBoolean(t *testing.T) {
	for _, s := range strings.Fields("1 yes y true t on YES True ON") {
		if b, err := parseBoolean(s); err != nil || !b {
			t.Errorf("parseBoolean(%q) = %v, %v, want true", s, b, err)
		}
	}
	for _, s := range strings.Fields("0 no n false f off NO False OFF") {
		if b, err := parseBoolean(s); err != nil || b {
			t.Errorf("parseBoolean(%q) = %v, %v, want false", s, b, err)
		}
	}
	for _, s := range []string{"", "2", "yess", " yes", "enable"} {
		if _, err := parseBoolean(s); err == nil {
			t.Errorf("parseBoolean(%q) succeeded", s)
		}
	}
}
