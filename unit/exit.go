package unit

import (
	"github.com/unitrun/unitrun/unit/exit"
)

// Exit is [exit.Exit], kept here as the name docs/job.md gives job users.
type Exit = exit.Exit
