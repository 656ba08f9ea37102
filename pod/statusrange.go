package pod

import (
	"errors"
	"strconv"
	"strings"
)

// A StatusRange is an inclusive range of HTTP status codes, written "200" or
// "200-399".
type StatusRange struct {
	Min, Max int
}

// MarshalText writes r as UnmarshalText reads it.
func (r StatusRange) MarshalText() ([]byte, error) {
	if r.Min == r.Max {
		return []byte(strconv.Itoa(r.Min)), nil
	}
	return []byte(strconv.Itoa(r.Min) + "-" + strconv.Itoa(r.Max)), nil
}

// UnmarshalText parses "N" or "N-M" with 100 <= N <= M <= 599.
func (r *StatusRange) UnmarshalText(text []byte) error {
	lo, hi, found := strings.Cut(string(text), "-")
	if !found {
		hi = lo
	}
	min, ok1 := statusCode(lo)
	max, ok2 := statusCode(hi)
	if !ok1 || !ok2 || min > max {
		return errors.New("must be a status code or a range like 200-399, within 100-599")
	}
	*r = StatusRange{Min: min, Max: max}
	return nil
}

func statusCode(s string) (int, bool) {
	if len(s) != 3 || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, _ := strconv.Atoi(s)
	return n, 100 <= n && n <= 599
}
