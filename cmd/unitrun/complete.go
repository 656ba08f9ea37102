package main

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/podrun"
)

// Shell completion of the names on the host: pods, a pod's apps, units.
// A completion reads the pods' state and asks a manager that runs; it
// starts nothing and boots no embedded manager, and offers nothing
// where it cannot read.

// completeTimeout bounds how long a completion waits for a manager.
const completeTimeout = 2 * time.Second

// podArgs says what the arguments of each pod command name, for their
// completion: the pods, one pod, one pod then one of its apps, or a pod or
// a file.
var podArgs = map[string]podArgKind{
	"start": onePod, "status": onePod, "stop": onePod, "rm": onePod, "top": onePod,
	"uninstall": onePod, "events": onePod, "stats": pods, "logs": podThenApp, "exec": podThenApp,
	"graph": podOrFile,
}

type podArgKind int

const (
	onePod podArgKind = iota
	pods
	podThenApp
	podOrFile
)

// completePodArgs gives each command of the pod group cmd that podArgs
// names, and that completes nothing of its own, the completion of its
// arguments.
func completePodArgs(cmd *cobra.Command, f *podFlags) {
	for _, c := range cmd.Commands() {
		kind, ok := podArgs[c.Name()]
		if !ok || c.Hidden || c.ValidArgsFunction != nil {
			continue
		}
		c.ValidArgsFunction = func(_ *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
			switch {
			case len(args) == 0 || kind == pods:
				names := f.podNames(prefix)
				if kind == podOrFile {
					return names, cobra.ShellCompDirectiveDefault
				}
				return slices.DeleteFunc(names, func(n string) bool { return slices.Contains(args, n) }), cobra.ShellCompDirectiveNoFileComp
			case len(args) == 1 && kind == podThenApp:
				return f.appNames(args[0], prefix), cobra.ShellCompDirectiveNoFileComp
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
	}
}

// podNames returns the names of the pods under --state-dir that begin
// with prefix.
func (f *podFlags) podNames(prefix string) []string {
	dir, err := f.dir()
	if err != nil {
		return nil
	}
	list, _ := pod.List(dir)
	var names []string
	for _, s := range list {
		if strings.HasPrefix(s.Name, prefix) {
			names = append(names, s.Name)
		}
	}
	return names
}

// appNames returns the names of pod name's apps that begin with prefix.
func (f *podFlags) appNames(name, prefix string) []string {
	dir, err := f.dir()
	if err != nil {
		return nil
	}
	m, err := (&podrun.Runner{StateDir: dir}).Manifest(name)
	if err != nil {
		return nil
	}
	var names []string
	for _, a := range m.Apps {
		if strings.HasPrefix(a.Name, prefix) {
			names = append(names, a.Name)
		}
	}
	return names
}

// completeUnits completes a command's one argument with the names of the
// units of the manager that --manager names, if it runs: those it has
// loaded and, with files, those of its unit files.
func (g *globals) completeUnits(files bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(context.Background(), completeTimeout)
		defer cancel()
		mgr, _, err := manager.Probe(ctx, g.manager, manager.Options{EmbeddedDir: g.embeddedDir}, false)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer mgr.Close()
		names, _ := mgr.ListUnitNames(ctx, prefix)
		if files {
			more, _ := mgr.ListUnitFileNames(ctx, prefix)
			names = append(names, more...)
		}
		slices.Sort(names)
		return slices.Compact(names), cobra.ShellCompDirectiveNoFileComp
	}
}
