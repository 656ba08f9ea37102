// Command throttle is a reverse proxy that sends what an HTTP server
// answers at most RATE bytes a second, all connections together: a
// registry on loopback made as fast as one across a network, for
// bench/imagepull.sh.
//
// Usage: throttle -listen 127.0.0.1:PORT -to http://127.0.0.1:PORT -rate 100M
package main

import (
	"flag"
	"io"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// link is the one link every answer crosses: it lets n bytes through
// once the bytes before them have had their time at rate.
type link struct {
	mu   sync.Mutex
	rate float64   // bytes a second
	free time.Time // when the link is free again
}

func (l *link) pass(n int) {
	l.mu.Lock()
	now := time.Now()
	if l.free.Before(now) {
		l.free = now
	}
	l.free = l.free.Add(time.Duration(float64(n) / l.rate * float64(time.Second)))
	wait := l.free.Sub(now)
	l.mu.Unlock()
	time.Sleep(wait)
}

type slowBody struct {
	io.ReadCloser
	l *link
}

func (b slowBody) Read(p []byte) (int, error) {
	if len(p) > 64<<10 {
		p = p[:64<<10]
	}
	n, err := b.ReadCloser.Read(p)
	b.l.pass(n)
	return n, err
}

// parseRate reads "100M", "512K" or a number of bytes.
func parseRate(s string) (float64, error) {
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	}
	n, err := strconv.ParseFloat(s, 64)
	return n * mult, err
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	to := flag.String("to", "", "URL of the server to pass requests to")
	rateFlag := flag.String("rate", "100M", "bytes a second, all answers together (K and M suffixes)")
	flag.Parse()
	target, err := url.Parse(*to)
	if err != nil || target.Host == "" {
		log.Fatalf("-to %q: not a URL", *to)
	}
	rate, err := parseRate(*rateFlag)
	if err != nil || rate <= 0 {
		log.Fatalf("-rate %q: not a rate", *rateFlag)
	}
	l := &link{rate: rate}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(r *http.Response) error {
		r.Body = slowBody{r.Body, l}
		return nil
	}
	log.Fatal(http.ListenAndServe(*listen, proxy))
}
