//go:build linkall

// Built with -tags linkall, runonly links every package that unitrun's
// main package imports (and so all that unitrun links), and runs their
// package inits, with none of unitrun's own code: the cost of linking the
// other commands' packages into the process of a run.

package main

import (
	_ "github.com/coreos/go-systemd/v22/daemon"
	_ "github.com/spf13/cobra"
	_ "github.com/unitrun/unitrun/api"
	_ "github.com/unitrun/unitrun/client"
	_ "github.com/unitrun/unitrun/dist"
	_ "github.com/unitrun/unitrun/hostapi/daemon"
	_ "github.com/unitrun/unitrun/hostapi/front"
	_ "github.com/unitrun/unitrun/hostapi/store"
	_ "github.com/unitrun/unitrun/inject"
	_ "github.com/unitrun/unitrun/internal/buildinfo"
	_ "github.com/unitrun/unitrun/internal/flock"
	_ "github.com/unitrun/unitrun/internal/journallog"
	_ "github.com/unitrun/unitrun/pod"
	_ "github.com/unitrun/unitrun/pod/podrun"
	_ "golang.org/x/sys/unix"
)
