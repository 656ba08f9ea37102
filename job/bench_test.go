package job_test

import (
	"testing"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/job"
)

// BenchmarkRun measures one `true` job, start to collected, at a time.
func BenchmarkRun(b *testing.B) {
	conn := systemdtest.Conn(b)
	for b.Loop() {
		if err := job.Command(conn, "/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunParallel measures `true` jobs in flight at once on one
// connection.
func BenchmarkRunParallel(b *testing.B) {
	conn := systemdtest.Conn(b)
	b.SetParallelism(4) // 4 × GOMAXPROCS jobs in flight
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := job.Command(conn, "/bin/true").Run(); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
