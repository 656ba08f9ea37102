package config

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// An Error is one rule an operations config breaks.
type Error struct {
	File string // the file; "" for a Config built in code
	Line int    // 1-based line; 0 when unknown
	Op   string // the op's name; "" outside an op or when it has none
	Key  string // the TOML key at fault, such as "exec" or "args.max"; "" for a whole op or file
	Rule string // what is wrong, naming the field
}

// Error returns "file:line: op "name": rule", leaving out the parts that
// are unknown.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	}
	if e.Op != "" {
		fmt.Fprintf(&b, "op %q: ", e.Op)
	}
	b.WriteString(e.Rule)
	return b.String()
}

// joinErrors returns the one error, or all of them joined, ordered
// stably by file and line; files keep the order in which they were read.
func joinErrors(errs []*Error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	fileOrder := make(map[string]int)
	for _, e := range errs {
		if _, ok := fileOrder[e.File]; !ok {
			fileOrder[e.File] = len(fileOrder)
		}
	}
	sort.SliceStable(errs, func(i, j int) bool {
		fi, fj := fileOrder[errs[i].File], fileOrder[errs[j].File]
		if fi != fj {
			return fi < fj
		}
		return errs[i].Line < errs[j].Line
	})
	joined := make([]error, len(errs))
	for i, e := range errs {
		joined[i] = e
	}
	return errors.Join(joined...)
}
