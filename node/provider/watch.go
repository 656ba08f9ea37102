package provider

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/fsnotify/fsnotify"
)

// watchRecords sends the status of a Pod as soon as its unitrun pod's
// records change, not at the next Poll: unitrun writes a pod's and each
// app's records by renaming a file into the pod's directory or one below
// it, which the watch sees as the file's creation. It watches the pods
// the provider runs (watchPod adds one) until ctx ends; without a watch
// (inotify refused), statuses are polled only.
func (p *Provider) watchRecords(ctx context.Context) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		p.log.Warn("cannot watch the pods' records; their statuses are polled only", "err", err)
		return
	}
	p.mu.Lock()
	p.watch = w
	for _, e := range p.pods {
		p.watchPod(e)
	}
	p.mu.Unlock()
	go func() {
		defer w.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case err := <-w.Errors:
				p.log.Warn("watching the pods' records", "err", err)
			case ev := <-w.Events:
				p.recordChanged(ev)
			}
		}
	}()
}

// watchPod watches the records of e's unitrun pod, if the provider
// watches and e runs: its directory and the directories in it; p.mu is
// held.
func (p *Provider) watchPod(e *entry) {
	if p.watch == nil || e.refused != nil {
		return
	}
	dir := p.eng.recordDir(e.name)
	dirs := []string{dir}
	if entries, err := os.ReadDir(dir); err == nil {
		for _, d := range entries {
			if d.IsDir() {
				dirs = append(dirs, filepath.Join(dir, d.Name()))
			}
		}
	}
	for _, d := range dirs {
		if err := p.watch.Add(d); err != nil {
			p.log.Warn("cannot watch the pod's records; its status is polled only", "unitrun_pod", e.name, "err", err)
		}
	}
}

// recordChanged sends the status of the Pod in whose unitrun pod's
// directory ev created a record, or a directory of records, which is then
// watched too.
func (p *Provider) recordChanged(ev fsnotify.Event) {
	if !ev.Has(fsnotify.Create) || strings.HasPrefix(filepath.Base(ev.Name), ".") {
		return // a temporary file, before its rename
	}
	name := p.eng.podOf(ev.Name)
	var found *entry
	p.mu.Lock()
	for _, e := range p.pods {
		if e.name == name && e.refused == nil {
			found = e
		}
	}
	if fi, err := os.Lstat(ev.Name); found != nil && err == nil && fi.IsDir() && p.watch != nil {
		// Records renamed into it before this are read below.
		if err := p.watch.Add(ev.Name); err != nil {
			p.log.Warn("cannot watch the pod's records; its status is polled only", "unitrun_pod", name, "err", err)
		}
	}
	p.mu.Unlock()
	if found != nil {
		p.sendStatus(context.Background(), found)
	}
}
