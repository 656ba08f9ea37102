package hostapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/internal/systemdtest"
)

// TestPageBounded lists a store of 250 records of uid 0 and 10 of uid
// 1000: pages hold at most MaxPage records and, followed by their
// cursors, give every visible record once, newest first; a page reads
// only the records it returns, so a caller that may see no job has none
// read, whatever the store holds.
func TestPageBounded(t *testing.T) {
	s := openTestStore(t)
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	var all []*api.Record
	for i := range 260 {
		r := &api.Record{ID: s.NewID(), Op: "rebase", State: api.StateSucceeded, CreatedAt: t0.Add(time.Duration(i%130) * time.Second)}
		if i%26 == 0 {
			r.CallerUID = 1000
		}
		if err := s.Put(r); err != nil {
			t.Fatal(err)
		}
		all = append(all, r)
	}
	everyone := func(string, uint32) bool { return true }
	if _, _, err := s.Page(nil, MaxPage+1, everyone); err == nil {
		t.Errorf("a page of %d: no error, want the limit refused", MaxPage+1)
	}

	var got []*api.Record
	var after *Cursor
	for pages := 0; ; pages++ {
		reads := s.reads.Load()
		recs, next, err := s.Page(after, MaxPage, everyone)
		if err != nil {
			t.Fatal(err)
		}
		if n := s.reads.Load() - reads; pages > 0 && n != int64(len(recs)) {
			t.Errorf("page %d: %d records read for %d returned", pages, n, len(recs))
		}
		if len(recs) > MaxPage {
			t.Fatalf("page %d holds %d records, more than %d", pages, len(recs), MaxPage)
		}
		got = append(got, recs...)
		if next == nil {
			break
		}
		after = next
	}
	if len(got) != len(all) {
		t.Fatalf("pages gave %d records, want %d", len(got), len(all))
	}
	seen := make(map[string]bool)
	for i, r := range got {
		if seen[r.ID] {
			t.Errorf("record %s listed twice", r.ID)
		}
		seen[r.ID] = true
		if i > 0 && newestFirst(got[i-1].CreatedAt, got[i-1].ID, r.CreatedAt, r.ID) >= 0 {
			t.Errorf("records %d and %d out of order", i-1, i)
		}
	}

	reads := s.reads.Load()
	recs, next, err := s.Page(nil, MaxPage, func(string, uint32) bool { return false })
	if err != nil || len(recs) != 0 || next != nil || s.reads.Load() != reads {
		t.Errorf("a caller that may see nothing: %d records, next %v, %v, %d records read: want none read", len(recs), next, err, s.reads.Load()-reads)
	}
	recs, next, err = s.Page(nil, MaxPage, func(_ string, uid uint32) bool { return uid == 1000 })
	if err != nil || len(recs) != 10 || next != nil || s.reads.Load()-reads != 10 {
		t.Errorf("uid 1000's jobs: %d records, next %v, %v, %d records read: want its 10, 10 read", len(recs), next, err, s.reads.Load()-reads)
	}
	if _, err := ParseCursor("1.../../x"); err == nil {
		t.Error("a forged cursor parsed")
	}
}

// TestSecurityListingBounded fills the store with 250 records of root's
// and lists them: uid 65534, which may see none of them, gets an empty
// list and has no record read (the listing used to read every record,
// output tails and all, before it filtered, so that 64 parallel listings
// took the daemon to 1.7 GB); root gets pages of at most MaxPage, each
// naming the next in its Link header, that hold every record once; a
// limit or cursor a caller makes up is refused.
func TestSecurityListingBounded(t *testing.T) {
	d, _ := newTestDaemon(t, systemdtest.Conn(t), "")
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
	curl(t, apiSock, nobody, "http://unitrun/v1/jobs") // the first listing makes the store's index
	reads := d.store.reads.Load()
	for range 8 {
		if status, body := curl(t, apiSock, nobody, "http://unitrun/v1/jobs"); status != http.StatusOK || strings.TrimSpace(body) != "[]" {
			t.Errorf("uid 65534 lists: %d %s, want 200 []", status, body)
		}
	}
	if n := d.store.reads.Load() - reads; n != 0 {
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
		if err != nil || resp.StatusCode != http.StatusOK || len(page) > MaxPage {
			t.Fatalf("GET %s: %s, %d records, %v: want at most %d", path, resp.Status, len(page), err, MaxPage)
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
	for _, query := range []string{"limit=0", "limit=101", "limit=x", "after=1.x", "after=" + url.QueryEscape("1.../../etc")} {
		if status, body := curl(t, apiSock, nil, "http://unitrun/v1/jobs?"+query); status != http.StatusBadRequest || errorCode(t, body) != api.CodeBadRequest {
			t.Errorf("GET /v1/jobs?%s: %d %s, want 400 bad_request", query, status, body)
		}
	}
}
