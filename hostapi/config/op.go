package config

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// argsWord is the word of an exec template replaced by the caller's args.
const argsWord = "{args}"

// callerWord is replaced by the caller's identity in env values.
const callerWord = "{caller}"

// CheckArgs reports whether args satisfy the op's rule: their number is
// within Args.Min and Args.Max, each matches Args.Pattern when it is set,
// and each is valid UTF-8 without NUL (which no argv can carry) and, for an
// op whose request file has the "lines" format, without a newline. The
// error names the index of the first arg at fault and the rule.
func (op *Op) CheckArgs(args []string) error {
	switch n := len(args); {
	case n < op.Args.Min:
		return fmt.Errorf("op %q: got %d args, want at least %d", op.Name, n, op.Args.Min)
	case n > op.Args.Max:
		return fmt.Errorf("op %q: got %d args, want at most %d", op.Name, n, op.Args.Max)
	}
	for i, a := range args {
		switch {
		case !utf8.ValidString(a):
			return fmt.Errorf("op %q: arg %d is not valid UTF-8", op.Name, i)
		case strings.IndexByte(a, 0) >= 0:
			return fmt.Errorf("op %q: arg %d contains NUL", op.Name, i)
		case op.RequestFile != "" && op.RequestFormat == "lines" && strings.IndexByte(a, '\n') >= 0:
			return fmt.Errorf("op %q: arg %d contains a newline, which request_format \"lines\" cannot carry", op.Name, i)
		case op.Args.Pattern != nil && !op.Args.Pattern.MatchString(a):
			return fmt.Errorf("op %q: arg %d does not match pattern %q", op.Name, i, op.Args.Pattern)
		}
	}
	return nil
}

// Allowed reports whether a caller with the given uid and gids may call the
// op: its uid is in AllowUIDs or one of its gids is in AllowGIDs. When both
// lists are empty, only root (uid 0) may.
func (op *Op) Allowed(uid uint32, gids []uint32) bool {
	if len(op.AllowUIDs) == 0 && len(op.AllowGIDs) == 0 {
		return uid == 0
	}
	if slices.Contains(op.AllowUIDs, uid) {
		return true
	}
	for _, g := range gids {
		if slices.Contains(op.AllowGIDs, g) {
			return true
		}
	}
	return false
}

// Argv returns the argv of an exec op called with args: the Exec template
// with args in place of its word "{args}", or appended when it has none.
// Only a whole word "{args}" is replaced (a valid op has at most one); the
// template is otherwise used as written and no shell is involved. Argv
// returns a new slice, and nil for a unit op.
func (op *Op) Argv(args []string) []string {
	if len(op.Exec) == 0 {
		return nil
	}
	if i := slices.Index(op.Exec, argsWord); i >= 0 {
		return slices.Concat(op.Exec[:i], args, op.Exec[i+1:])
	}
	return slices.Concat(op.Exec, args)
}

// Environ returns the op's environment as sorted "KEY=value" entries: Env
// with every "{caller}" in a value replaced by callerID, and each variable
// of EnvPassthrough for which from reports a value, copied as it is. A nil
// from passes nothing through.
func (op *Op) Environ(callerID string, from func(string) (string, bool)) []string {
	env := make([]string, 0, len(op.Env)+len(op.EnvPassthrough))
	for k, v := range op.Env {
		env = append(env, k+"="+strings.ReplaceAll(v, callerWord, callerID))
	}
	if from != nil {
		for _, k := range op.EnvPassthrough {
			if v, ok := from(k); ok {
				env = append(env, k+"="+v)
			}
		}
	}
	slices.Sort(env)
	return env
}
