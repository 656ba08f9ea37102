package main

import (
	"os"
	"strings"
	"testing"
)

// TestExitStatusesInReadme checks that README.md's table of the exit
// statuses of run, start and wait is exitStatuses word for word, and that
// their --help shows it (the man pages are made from the same help).
func TestExitStatusesInReadme(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "\n"+exitStatuses+"\n") {
		t.Errorf("README.md lacks the table of exitStatuses, word for word:\n%s", exitStatuses)
	}
	root := newRoot()
	for _, name := range []string{"run", "start", "wait"} {
		c, _, err := root.Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(c.Long, "\n\nExit statuses:\n\n"+exitStatuses) {
			t.Errorf("unitrun %s --help does not end with the exit statuses:\n%s", name, c.Long)
		}
	}
}
