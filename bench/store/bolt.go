package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/unitrun/unitrun/hostapi/store"
	bolt "go.etcd.io/bbolt"
)

var (
	jobsBucket    = []byte("jobs")
	startedBucket = []byte("started")
)

// boltStore keeps the records and started marks in one bbolt file, as
// containerd keeps its metadata; each commit syncs (bbolt's default).
type boltStore struct {
	db  *bolt.DB
	out outputs
}

func openBolt(dir string) (design, error) {
	out := outputs(filepath.Join(dir, "output"))
	if err := os.Mkdir(string(out), 0o700); err != nil {
		return nil, err
	}
	db, err := bolt.Open(filepath.Join(dir, "records.db"), 0o600, nil)
	if err != nil {
		return nil, err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{jobsBucket, startedBucket} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	return &boltStore{db: db, out: out}, err
}

func (b *boltStore) newID() string                          { return newID() }
func (b *boltStore) create(r *store.Record) error           { return b.put(r) }
func (b *boltStore) openOutput(id string) (*os.File, error) { return b.out.open(id) }
func (b *boltStore) tail(id string, n int) (string, error)  { return b.out.tail(id, n) }
func (b *boltStore) close() error                           { return b.db.Close() }

func (b *boltStore) put(r *store.Record) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return b.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(jobsBucket).Put([]byte(r.ID), data) })
}

func (b *boltStore) markStarted(id string) error {
	return b.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(startedBucket).Put([]byte(id), nil) })
}

func (b *boltStore) get(id string) (*store.Record, error) {
	var r store.Record
	err := b.db.View(func(tx *bolt.Tx) error {
		data := tx.Bucket(jobsBucket).Get([]byte(id))
		if data == nil {
			return fmt.Errorf("job %s: %w", id, store.ErrNotFound)
		}
		return json.Unmarshal(data, &r)
	})
	return &r, err
}

// page reads the newest records by id (ids sort by their creation time)
// until it has limit.
func (b *boltStore) page(limit int) (int, error) {
	var recs []*store.Record
	err := b.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(jobsBucket).Cursor()
		for k, v := c.Last(); k != nil && len(recs) < limit; k, v = c.Prev() {
			var r store.Record
			if err := json.Unmarshal(v, &r); err != nil {
				return err
			}
			recs = append(recs, &r)
		}
		return nil
	})
	return len(recs), err
}

// prune deletes the finished records beyond the newest keep, in one
// transaction, then their output logs.
func (b *boltStore) prune(keep int) error {
	var gone []string
	err := b.db.Update(func(tx *bolt.Tx) error {
		var done []string
		c := tx.Bucket(jobsBucket).Cursor()
		for k, v := c.Last(); k != nil; k, v = c.Prev() {
			var r struct {
				State string `json:"state"`
			}
			if err := json.Unmarshal(v, &r); err != nil {
				return err
			}
			if r.State == "succeeded" || r.State == "failed" || r.State == "canceled" {
				done = append(done, string(k))
			}
		}
		if len(done) <= keep {
			return nil
		}
		gone = slices.Clone(done[keep:])
		for _, id := range gone {
			if err := tx.Bucket(jobsBucket).Delete([]byte(id)); err != nil {
				return err
			}
			if err := tx.Bucket(startedBucket).Delete([]byte(id)); err != nil {
				return err
			}
		}
		return nil
	})
	for _, id := range gone {
		if err == nil {
			err = b.out.remove(id)
		}
	}
	return err
}
