package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/coreos/go-systemd/v22/journal"

	"github.com/unitrun/unitrun/internal/journallog"
)

// logLevels are the values of the daemon's --log-level.
var logLevels = map[string]slog.Level{
	"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError,
}

// daemonLogger returns the daemon's logger at level (a key of logLevels):
// native journal entries sent to journalSocket when stderr is the journal
// stream systemd set up (JOURNAL_STREAM names stderr's device and inode),
// so that their attributes are journal fields; otherwise slog's text format
// on stderr, where the journal entries that the socket refuses go too.
func daemonLogger(level, journalSocket string) (*slog.Logger, error) {
	lv, ok := logLevels[level]
	if !ok {
		return nil, fmt.Errorf("--log-level %q: must be debug, info, warn or error", level)
	}
	text := slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lv})
	if isJournal, _ := journal.StderrIsJournalStream(); isJournal {
		h, err := journallog.New(journalSocket, journallog.Options{Level: lv, Identifier: "unitrun", Fallback: text})
		if err == nil {
			return slog.New(h), nil
		}
	}
	return slog.New(text), nil
}
