package scheduler

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/core"
	"github.com/unitrun/unitrun/hostapi/internal/daemontest"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

// TestSecurityListingBounded fills the store with 250 records of root's
// and lists them: uid 65534, which may see none of them, gets an empty
// list and has no record read (the listing used to read every record,
// output tails and all, before it filtered, so that 64 parallel listings
// took the daemon to 1.7 GB); root gets pages of at most api.MaxPage, each
// naming the next in its Link header, that hold every record once; a
// limit or cursor a caller makes up is refused.
func TestSecurityListingBounded(t *testing.T) {
	d, _ := newTestScheduler(t, systemdtest.Conn(t), "")
	apiSock, _ := serveTest(t, d)
	t0 := time.Now().Add(-time.Hour)
	for i := range 250 {
		r := &api.Record{ID: d.store.NewID(), Op: "echo", State: api.StateSucceeded, CreatedAt: t0.Add(time.Duration(i) * time.Millisecond),
			OutputTail: strings.Repeat("x", 1000)}
		if err := d.store.Put(r); err != nil {
			t.Fatal(err)
		}
	}
	nobody := []string{"setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"}
	daemontest.Curl(t, apiSock, nobody, "http://unitrun/v1/jobs") // a first listing, as a daemon that has served one
	reads := d.store.disk().Reads()
	for range 8 {
		if status, body := daemontest.Curl(t, apiSock, nobody, "http://unitrun/v1/jobs"); status != http.StatusOK || strings.TrimSpace(body) != "[]" {
			t.Errorf("uid 65534 lists: %d %s, want 200 []", status, body)
		}
	}
	if n := d.store.disk().Reads() - reads; n != 0 {
		t.Errorf("8 listings by a caller that may see no job read %d records, want none", n)
	}

	hc := unixHTTP(apiSock)
	seen := make(map[string]bool)
	for path := "/v1/jobs"; path != ""; {
		resp, err := hc.Get("http://unitrun" + path)
		if err != nil {
			t.Fatal(err)
		}
		var page []*api.Record
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || len(page) > api.MaxPage {
			t.Fatalf("GET %s: %s, %d records, %v: want at most %d", path, resp.Status, len(page), err, api.MaxPage)
		}
		for _, r := range page {
			if seen[r.ID] {
				t.Errorf("record %s listed twice", r.ID)
			}
			seen[r.ID] = true
		}
		path = ""
		if link := resp.Header.Get("Link"); link != "" {
			target, rel, _ := strings.Cut(link, ";")
			if strings.TrimSpace(rel) != `rel="next"` {
				t.Fatalf("Link %q: want rel=\"next\"", link)
			}
			path = strings.Trim(target, "<>")
		}
	}
	if len(seen) != 250 {
		t.Errorf("pages gave %d records, want 250", len(seen))
	}
	for _, query := range []string{"limit=0", "limit=" + strconv.Itoa(api.MaxPage+1), "limit=x", "after=1.x", "after=" + url.QueryEscape("1.../../etc")} {
		if status, body := daemontest.Curl(t, apiSock, nil, "http://unitrun/v1/jobs?"+query); status != http.StatusBadRequest || errorCode(t, body) != api.CodeBadRequest {
			t.Errorf("GET /v1/jobs?%s: %d %s, want 400 bad_request", query, status, body)
		}
	}
	// The scheduler keeps to the bound whichever front end asks.
	for _, limit := range []int{0, api.MaxPage + 1} {
		var e *api.Error
		if _, _, err := d.ListPage(t.Context(), core.Caller{}, "", limit); !errors.As(err, &e) || e.Code != api.CodeBadRequest {
			t.Errorf("ListPage of %d records: %v, want a bad_request error", limit, err)
		}
	}
}
