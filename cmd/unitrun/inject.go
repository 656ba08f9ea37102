package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/unitrun/unitrun/inject"
	"github.com/unitrun/unitrun/internal/pullexec"
	"github.com/unitrun/unitrun/pod"
)

func newInjectCmd(g *globals) *cobra.Command {
	var dir, osRelease string
	var gc, asJSON bool
	var variants []string
	var from imageSource
	cmd := &cobra.Command{
		Use:   "inject [--dir DIR] [PATH | --variant PATH[:FIELD=PATTERN,...]... | --image REF --path PATH]",
		Short: "Copy a binary into /run/bin under a content-addressed name and print its path",
		Long: `Copy PATH (default: unitrun itself) into DIR as NAME-<sha256 prefix>,
atomically and idempotently, verify its hash, and print the installed path.
unitrun itself takes the pods' exit hook (unitrun-hook) and its registry
client (unitrun-pull) beside it along, as NAME-<sha256 prefix>-hook and
-pull, where the copy finds them.
PATH must be a regular file (a FIFO or a device is refused). The copy is
mode 0700 plus r-x for group and for others where PATH grants that class
read: a file only its owner may read stays so.

With --variant (repeatable), pick the first build whose os-release(5)
patterns fit the host, such as
  --variant /bin/agent:ID=fedora --variant /bin/agent.rhel9:ID=rhel,VERSION_ID=9*
and refuse when none fits. --gc removes the installed files of DIR that no
loaded unit of the manager runs (in any of its commands).

With --image REF --path PATH, copy the file at PATH in image REF, as the
image's root shows it, without unpacking the image: from the image store
(--image-dir) if it holds REF, else from the registry (credentials as
"image pull" reads them), reading the image's layers top first and only
until one settles PATH. A PATH the image does not have exits 2.

DIR must be an absolute path. A DIR or PATH that inject refuses for what it
is (missing, not a directory or not a regular file, a DIR that others may
write) exits 2, naming it; a failure to read or write exits 125.`,
		Example: `  unitrun inject
  unitrun inject --dir /run/bin ./agent
  unitrun inject --variant ./agent:ID=fedora --variant ./agent.rhel9:ID=rhel,VERSION_ID=9*
  unitrun inject --gc
  unitrun inject --image quay.io/example/agent:4.18 --path /usr/bin/agent`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if gc {
				if len(args) > 0 || len(variants) > 0 {
					return &exitError{code: exitUsage, err: fmt.Errorf("--gc removes the copies in --dir that no unit runs; it takes no PATH or --variant")}
				}
				return injectGC(cmd, g, dir, asJSON)
			}
			if from.ref != "" || from.path != "" {
				if len(args) > 0 || len(variants) > 0 {
					return usageError(fmt.Errorf("--image copies --path out of an image; it takes no PATH or --variant"))
				}
				path, err := from.inject(cmd.Context(), dir)
				if err != nil {
					return err
				}
				return printInjected(cmd, path, asJSON)
			}
			src, err := injectSource(args, variants, osRelease)
			if err != nil {
				return &exitError{code: exitUsage, err: err}
			}
			var path string
			if src == "" {
				path, err = inject.Self(cmd.Context(), dir, pod.HookPath, pullexec.Path)
			} else {
				path, err = inject.Install(cmd.Context(), dir, src)
			}
			if err != nil {
				return injectError("--dir", err)
			}
			return printInjected(cmd, path, asJSON)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", inject.DefaultDir, "directory to install into")
	cmd.Flags().BoolVar(&gc, "gc", false, "remove installed files that no loaded unit uses")
	cmd.Flags().StringArrayVar(&variants, "variant", nil, "a build `PATH[:FIELD=PATTERN,...]` and the os-release fields it fits (repeatable)")
	cmd.Flags().StringVar(&osRelease, "os-release", "/etc/os-release", "the host's os-release `FILE`, for --variant")
	jsonFlag(cmd, &asJSON, `print {"path"}, or with --gc {"removed": [...]}, as JSON`)
	from.flags(cmd)
	return cmd
}

// printInjected prints the path of the installed copy.
func printInjected(cmd *cobra.Command, path string, asJSON bool) error {
	if asJSON {
		return printJSON(cmd.OutOrStdout(), map[string]string{"path": path})
	}
	fmt.Fprintln(cmd.OutOrStdout(), path)
	return nil
}

// injectSource returns the file to install: PATH, the variant that fits
// the host, or "" for unitrun itself.
func injectSource(args, variants []string, osRelease string) (string, error) {
	if len(variants) == 0 {
		if len(args) == 1 {
			return args[0], nil
		}
		return "", nil
	}
	if len(args) > 0 {
		return "", fmt.Errorf("give PATH or --variant, not both")
	}
	var vs []inject.Variant
	for _, s := range variants {
		v, err := inject.ParseVariant(s)
		if err != nil {
			return "", fmt.Errorf("--variant %w", err)
		}
		vs = append(vs, v)
	}
	rel, err := inject.ReadOSRelease(osRelease)
	if err != nil {
		return "", err
	}
	v, err := inject.Choose(vs, rel)
	if err != nil {
		return "", err
	}
	return v.Path, nil
}

// injectError is the exit of an inject that failed: 2 for a path inject
// refuses for what it is (inject.RefusedError), naming dirFlag, the flag
// that gave the dir, or the source; 125 otherwise.
func injectError(dirFlag string, err error) error {
	var re *inject.RefusedError
	switch {
	case !errors.As(err, &re):
		return &exitError{code: exitFailed, err: err}
	case re.Dir:
		return &exitError{code: exitUsage, err: fmt.Errorf("%s %s: %w", dirFlag, re.Path, re.Err)}
	}
	return &exitError{code: exitUsage, err: err}
}

// injectGC removes what no loaded unit runs; a --dir that GC would
// refuse is refused before the manager is reached.
func injectGC(cmd *cobra.Command, g *globals, dir string, asJSON bool) error {
	if err := inject.CheckDir(dir); err != nil {
		return injectError("--dir", err)
	}
	ctx := cmd.Context()
	mgr, err := g.open(ctx)
	if err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	defer mgr.Close()
	inUse, err := inject.InUse(ctx, mgr)
	if err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	removed, err := inject.GC(dir, func(p string) bool { return inUse[p] })
	if asJSON {
		if jerr := printJSON(cmd.OutOrStdout(), map[string][]string{"removed": append([]string{}, removed...)}); jerr != nil {
			return jerr
		}
	} else {
		for _, p := range removed {
			fmt.Fprintln(cmd.OutOrStdout(), "removed", p)
		}
	}
	if err != nil {
		return injectError("--dir", err)
	}
	return nil
}
