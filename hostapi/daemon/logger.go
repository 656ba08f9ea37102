package daemon

import (
	"log/slog"
	"os"

	"github.com/coreos/go-systemd/v22/journal"

	"github.com/unitrun/unitrun/internal/journallog"
)

// NewLogger returns a logger for Options.Log at level: native journal
// entries sent to journalSocket (journallog.DefaultSocket for journald's)
// when stderr is the journal stream systemd set up (JOURNAL_STREAM names
// stderr's device and inode), so that the attributes of the daemon's
// events are journal fields; otherwise slog's text format on stderr, where
// the journal entries that the socket refuses go too.
func NewLogger(level slog.Level, journalSocket string) *slog.Logger {
	text := slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})
	if isJournal, _ := journal.StderrIsJournalStream(); isJournal {
		h, err := journallog.New(journalSocket, journallog.Options{Level: level, Identifier: "unitrun", Fallback: text})
		if err == nil {
			return slog.New(h)
		}
	}
	return slog.New(text)
}
