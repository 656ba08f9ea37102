package appexec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/pod/record"
)

// Once the pod is stopping, a start whose app's record cannot be read
// fails with why it cannot, not as the start of an app that has ended;
// one whose app has ended is refused, its record left as it was.
func TestStartWhileStopping(t *testing.T) {
	stateDir := t.TempDir()
	const pod = "p"
	if err := record.MarkStopping(stateDir, pod); err != nil {
		t.Fatal(err)
	}
	apps := filepath.Join(record.Dir(stateDir, pod), "apps")
	if err := os.MkdirAll(apps, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(app, data string) {
		if err := os.WriteFile(filepath.Join(apps, app+".json"), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	write("broken", "{")
	err := Start(stateDir, pod, &App{Name: "broken", Exec: []string{"/bin/true"}}, nil, nil)
	var broken *record.BrokenError
	if !errors.As(err, &broken) || strings.Contains(err.Error(), "has ended") {
		t.Errorf("start of an app whose record is broken: %v, want the record's error", err)
	}

	ended := record.AppStatus{Name: "ended", State: record.AppExited, ExitCode: new(int)}
	if err := record.WriteApp(stateDir, pod, ended); err != nil {
		t.Fatal(err)
	}
	err = Start(stateDir, pod, &App{Name: "ended", Exec: []string{"/bin/true"}}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "app ended has ended: no run begins") {
		t.Errorf("start of an app that has ended: %v, want it refused", err)
	}
	if s, err := record.ReadApp(stateDir, pod, "ended"); err != nil || s.State != record.AppExited {
		t.Errorf("record of the app that has ended, after the refused start: %+v, %v", s, err)
	}
}
