package provider

import (
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// measureEvery is how often the node measures a running Pod's emptyDirs
// on disk that have a sizeLimit: the kubelet's eviction manager looks
// every 10 s.
const measureEvery = 10 * time.Second

// evicted returns why the Pod of e, whose unitrun pod is in state s, is
// evicted, in the kubelet's words, or "": once one of its emptyDirs on
// disk holds more than its sizeLimit (the blocks its files take, as du
// counts them), measured every measureEvery while the pod runs. An
// eviction stands once found.
func (p *Provider) evicted(e *entry, s podState, now time.Time) string {
	p.mu.Lock()
	why, vols := e.eviction, e.volumes
	due := why == "" && !s.ended() && now.Sub(e.measured) >= measureEvery
	if due {
		e.measured = now
	}
	p.mu.Unlock()
	if !due {
		return why
	}
	for _, n := range slices.Sorted(maps.Keys(vols)) {
		v := vols[n]
		if v.sizeLimit == nil || usage(v.dir) <= v.sizeLimit.Value() {
			continue
		}
		why = fmt.Sprintf("Usage of EmptyDir volume %q exceeds the limit %q. ", n, v.sizeLimit.String())
		p.mu.Lock()
		e.eviction = why
		p.mu.Unlock()
		return why
	}
	return ""
}

// usage is the disk space the files under dir take, in bytes: their
// blocks, as du counts them. What cannot be read counts nothing.
func usage(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := d.Info(); err == nil {
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			}
		}
		return nil
	})
	return n
}
