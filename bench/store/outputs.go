package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/unitrun/unitrun/hostapi/store"
)

// outputs is the directory of output logs, a file per job, of the bbolt
// design: the unit appends to its file whoever runs, so the
// output cannot live in the record store's file.
type outputs string

func (o outputs) path(id string) string { return filepath.Join(string(o), id+".log") }

func (o outputs) open(id string) (*os.File, error) {
	return os.OpenFile(o.path(id), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
}

func (o outputs) tail(id string, n int) (string, error) {
	f, err := os.Open(o.path(id))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	return store.TailOf(f, n)
}

func (o outputs) remove(id string) error {
	if err := os.Remove(o.path(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// newID returns an id of the store's form.
func newID() string {
	var b [4]byte
	rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}
