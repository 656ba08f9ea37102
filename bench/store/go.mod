module github.com/unitrun/unitrun/bench/store

go 1.26.8

require (
	github.com/unitrun/unitrun v0.0.0
	go.etcd.io/bbolt v1.4.3
	golang.org/x/sys v0.49.0
)

replace github.com/unitrun/unitrun => ../..
