package store

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkMark measures marking a job (MarkStarted): as the store does,
// a link to its mark file, and as a file of its own, the way it falls
// back to when there is no mark file to link.
func BenchmarkMark(b *testing.B) {
	for _, link := range []bool{true, false} {
		name := "link"
		if !link {
			name = "file"
		}
		b.Run(name, func(b *testing.B) {
			s, err := Open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			if !link {
				os.Remove(filepath.Join(s.dir, markFile))
			}
			ids := make([]string, b.N)
			for i := range ids {
				r := &Record{ID: s.NewID(), Op: "true", State: "running"}
				if err := s.Stage(r); err != nil {
					b.Fatal(err)
				}
				ids[i] = r.ID
			}
			b.ResetTimer()
			for _, id := range ids {
				if err := s.MarkStarted(id); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
