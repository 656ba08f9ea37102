package appexec

import "testing"

// Credential gives a user's primary group, or the group set, without
// supplementary groups; nil for an app with neither; an error for a user
// that does not exist.
func TestCredential(t *testing.T) {
	cred, err := Credential(&App{User: "daemon", Group: "root"})
	if err != nil {
		t.Fatal(err)
	}
	if cred.Uid == 0 || cred.Gid != 0 || len(cred.Groups) != 0 {
		t.Errorf("credential of user daemon, group root: %+v", cred)
	}
	if cred, err := Credential(&App{}); cred != nil || err != nil {
		t.Errorf("credential of an app with no user: %+v, %v", cred, err)
	}
	if _, err := Credential(&App{User: "no-such-user-here"}); err == nil {
		t.Error("credential of an unknown user: no error")
	}
}
