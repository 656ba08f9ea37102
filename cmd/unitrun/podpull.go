package main

import (
	"context"
	"sync"

	"github.com/unitrun/unitrun/image"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/podrun"
)

// showPulls has the pulls that r makes for the pods it creates show their
// progress on p as image pull shows it: a line redrawn on a terminal, else
// a timestamped line per layer, then one for the image. It shows nothing
// until a layer downloads: an image the store holds, or whose layers it
// holds, pulls in silence. A nil p shows nothing.
func showPulls(r *podrun.Runner, p *progress) {
	if p == nil {
		return
	}
	r.Pull = func(ctx context.Context, s *image.Store, a *pod.App) (*image.Image, error) {
		bar := newPullBar(p, a.Image)
		var mu sync.Mutex
		var stop func()
		o := image.PullOptions{Policy: a.PullPolicy(), Progress: func(pr image.Progress) {
			mu.Lock()
			defer mu.Unlock()
			if stop == nil && pr.Complete {
				return
			}
			bar.update(pr)
			if stop == nil {
				stop = p.ticking(bar.lines)
			}
		}}
		img, err := pullImage(ctx, s, a.Image, o)
		mu.Lock()
		defer mu.Unlock()
		if stop == nil {
			return img, err
		}
		stop()
		if err == nil {
			bar.pulled(img)
		}
		return img, err
	}
}
