package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/unit"
)

// usageError is a bad flag or argument: unitrun exits 2 with err.
func usageError(err error) error {
	return &exitError{code: exitUsage, err: err}
}

// applyContract gives every command of the tree under root the exit
// statuses of README's table for what a user typed wrong: an unknown
// subcommand, an unknown flag, a bad flag value, a wrong number of
// arguments and a bad --manager or --embedded-dir all exit 2 with a message that names them.
// Any other error a command returns that is not an *exitError is one of
// unitrun's own failures and exits 125 (see main).
func applyContract(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(badFlags{flagError(err)}) })
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return checkManagerFlags(root) }
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		switch {
		case c.HasSubCommands() && !c.Runnable():
			// A group: cobra would print its help and exit 0 for
			// "unitrun op bogus".
			c.Args = subcommandArgs
			c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
		case c.Args != nil:
			check := c.Args
			c.Args = func(c *cobra.Command, args []string) error {
				err := check(c, args)
				if ee := (*exitError)(nil); err == nil || errors.As(err, &ee) {
					return err
				}
				// cobra's count of the arguments.
				return usageError(fmt.Errorf("%w; usage: %s", err, c.UseLine()))
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// badFlags is a command line whose flags could not be parsed: those
// after the one at fault were not read.
type badFlags struct{ error }

func (b badFlags) Unwrap() error { return b.error }

// subcommandArgs refuses the arguments of a group command, whose first
// argument, had it named a subcommand, cobra would have taken as one.
func subcommandArgs(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2 // cobra's default, which it sets only where it suggests itself
	}
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %q?)", s[0])
	}
	return usageError(fmt.Errorf("%s; see %q", msg, c.CommandPath()+" --help"))
}

// flagError says in a user's words what is wrong with a flag: pflag's
// message for a bad value ends in the parser's own ("strconv.ParseInt:
// parsing ..."), and the one for a missing value names a shorthand alone.
func flagError(err error) error {
	var vre *pflag.ValueRequiredError
	if errors.As(err, &vre) {
		return fmt.Errorf("--%s: needs a value", vre.GetFlag().Name)
	}
	var ive *pflag.InvalidValueError
	if !errors.As(err, &ive) {
		return err
	}
	f := ive.GetFlag()
	rule := ive.Unwrap().Error()
	switch t := f.Value.Type(); {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"), t == "count":
		rule = "must be a whole number"
	case t == "duration":
		rule = "must be a duration such as 90s, 5m or 1h30m"
	case t == "bool":
		rule = "must be true or false"
	}
	return fmt.Errorf("--%s %q: %s", f.Name, ive.GetValue(), rule)
}

// checkManagerFlags checks --manager and --embedded-dir, or
// $UNITRUN_MANAGER and $UNITRUN_EMBEDDED_DIR when a flag is not given,
// before any command reaches for a manager.
func checkManagerFlags(root *cobra.Command) error {
	flags := root.PersistentFlags()
	if _, err := manager.ParseChoice(flags.Lookup("manager").Value.String()); err != nil {
		return usageError(err)
	}
	if err := (manager.Options{EmbeddedDir: flags.Lookup("embedded-dir").Value.String()}).Check(); err != nil {
		return usageError(err)
	}
	return nil
}

// serviceName returns the service that --unit NAME names, by the suffix
// rule of every unit name unitrun takes (unit.Complete): a name of
// another unit type, such as "x.scope", is an error.
func serviceName(name string) (string, error) {
	svc, err := unit.Complete(name)
	if err != nil {
		return "", fmt.Errorf("--unit: %w", err)
	}
	if !strings.HasSuffix(svc, ".service") {
		return "", fmt.Errorf("--unit %q: a command runs as a service: give a name ending in .service, or no suffix", name)
	}
	return svc, nil
}

// unitArg takes exactly one argument, a unit name that unit.Complete
// completes; the command's RunE completes it.
func unitArg(c *cobra.Command, args []string) error {
	if err := cobra.ExactArgs(1)(c, args); err != nil {
		return err
	}
	if _, err := unit.Complete(args[0]); err != nil {
		return usageError(err)
	}
	return nil
}

// flagPathError is err about the path that flag names, in the user's
// words: the system call that failed is left out, and the path it failed
// on is named when it is not the flag's own, as in
// "--state-dir /etc/passwd/x: /etc/passwd: not a directory".
func flagPathError(flag, path string, err error) error {
	var pe *fs.PathError
	var se *os.SyscallError
	switch {
	case errors.As(err, &pe) && pe.Path != path:
		return fmt.Errorf("%s %s: %s: %w", flag, path, pe.Path, pe.Err)
	case errors.As(err, &pe):
		return fmt.Errorf("%s %s: %w", flag, path, pe.Err)
	case errors.As(err, &se):
		return fmt.Errorf("%s %s: %w", flag, path, se.Err)
	}
	return fmt.Errorf("%s: %w", flag, err)
}
