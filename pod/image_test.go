package pod

import (
	"reflect"
	"strings"
	"testing"

	"github.com/unitrun/unitrun/image"
	"github.com/unitrun/unitrun/pod/appexec"
)

// TestMergeImage checks Kubernetes' rules for an app's command and args
// against an image's Entrypoint and Cmd, the merge of Env, WorkingDir and
// the user, its names resolved in the image's own files.
func TestMergeImage(t *testing.T) {
	cfg := image.Config{
		Entrypoint: []string{"/ep", "-e"},
		Cmd:        []string{"cmd-arg"},
		Env:        []string{"PATH=/img/bin", "A=image", "B=x=y"},
		WorkingDir: "/srv",
		User:       "web",
	}
	files := ImageFiles{
		Passwd: []byte("root:x:0:0:root:/root:/bin/sh\n# comment\nweb:x:1000:1001::/home/web:/bin/sh\nbad line\n"),
		Group:  []byte("root:x:0:\nweb:x:1001:\nstaff:x:50:web,other\nwheel:x:10:other\n"),
	}
	web := appexec.Identity{UID: 1000, GID: 1001, Groups: []uint32{50}, Home: "/home/web"}
	tests := []struct {
		name  string
		app   App
		cfg   *image.Config // nil: cfg
		files *ImageFiles   // nil: files
		want  Merged
	}{
		{name: "neither command nor args: Entrypoint and Cmd", want: Merged{Exec: []string{"/ep", "-e", "cmd-arg"}}},
		{name: "command only: no Entrypoint, no Cmd", app: App{Exec: []string{"/bin/x"}}, want: Merged{Exec: []string{"/bin/x"}}},
		{name: "args only: Entrypoint and args", app: App{Args: []string{"a1", "a2"}}, want: Merged{Exec: []string{"/ep", "-e", "a1", "a2"}}},
		{name: "both: command and args", app: App{Exec: []string{"/bin/x"}, Args: []string{"a1"}}, want: Merged{Exec: []string{"/bin/x", "a1"}}},
		{name: "no Entrypoint: Cmd alone", cfg: &image.Config{Cmd: []string{"sh"}}, want: Merged{Exec: []string{"sh"}, WorkingDir: "/", Identity: appexec.Identity{Home: "/root"}}},
		{name: "env: the image's, the app's win", app: App{Env: map[string]string{"A": "app", "C": "c"}}, want: Merged{Env: map[string]string{"PATH": "/img/bin", "A": "app", "B": "x=y", "C": "c"}}},
		{name: "workingDir: the app's wins", app: App{WorkingDir: "/data"}, want: Merged{WorkingDir: "/data"}},
		{name: "image user uid:gid", cfg: &image.Config{Cmd: []string{"x"}, User: "4:5"}, want: Merged{Exec: []string{"x"}, WorkingDir: "/", Identity: appexec.Identity{UID: 4, GID: 5, Home: "/"}}},
		{name: "image user uid of a passwd entry", cfg: &image.Config{Cmd: []string{"x"}, User: "1000"}, want: Merged{Exec: []string{"x"}, WorkingDir: "/", Identity: web}},
		{name: "image user name:group", cfg: &image.Config{Cmd: []string{"x"}, User: "web:wheel"}, want: Merged{Exec: []string{"x"}, WorkingDir: "/", Identity: appexec.Identity{UID: 1000, GID: 10, Groups: []uint32{50}, Home: "/home/web"}}},
		{name: "app's user wins, image's group ignored", cfg: &image.Config{Cmd: []string{"x"}, User: "web:wheel"}, app: App{User: "0"}, want: Merged{Exec: []string{"x"}, WorkingDir: "/", Identity: appexec.Identity{Home: "/root"}}},
		{name: "app's group wins over the image's", cfg: &image.Config{Cmd: []string{"x"}, User: "web:wheel"}, app: App{Group: "staff"}, want: Merged{Exec: []string{"x"}, WorkingDir: "/", Identity: appexec.Identity{UID: 1000, GID: 50, Groups: []uint32{50}, Home: "/home/web"}}},
		{name: "runAsNonRoot: the image's numeric user", cfg: &image.Config{Cmd: []string{"x"}, User: "1000"}, app: App{RunAsNonRoot: true}, want: Merged{Exec: []string{"x"}, WorkingDir: "/", Identity: web}},
		{name: "runAsNonRoot: the app's user wins over the image's root", cfg: &image.Config{Cmd: []string{"x"}}, app: App{RunAsNonRoot: true, User: "web"}, want: Merged{Exec: []string{"x"}, WorkingDir: "/", Identity: web}},
		{name: "no passwd: numeric ids as they are", cfg: &image.Config{Cmd: []string{"x"}, User: "7"}, files: &ImageFiles{}, want: Merged{Exec: []string{"x"}, WorkingDir: "/", Identity: appexec.Identity{UID: 7, Home: "/"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, f := cfg, files
			if tt.cfg != nil {
				c = *tt.cfg
			}
			if tt.files != nil {
				f = *tt.files
			}
			a := tt.app
			a.Image = "example.test/app:1"
			got, err := MergeImage("apps[0]", &a, c, f)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			if want.Exec == nil {
				want.Exec = []string{"/ep", "-e", "cmd-arg"}
			}
			if want.Env == nil {
				want.Env = map[string]string{}
				for _, kv := range c.Env {
					k, v, _ := strings.Cut(kv, "=")
					want.Env[k] = v
				}
			}
			if want.WorkingDir == "" {
				want.WorkingDir = "/srv"
			}
			if reflect.ValueOf(want.Identity).IsZero() {
				want.Identity = web
			}
			if !reflect.DeepEqual(*got, want) {
				t.Errorf("got  %+v\nwant %+v", *got, want)
			}
		})
	}
}

// TestMergeImageErrors checks that what the image cannot give is refused
// naming the app's field or the image's config.
func TestMergeImageErrors(t *testing.T) {
	files := ImageFiles{Passwd: []byte("root:x:0:0::/root:/bin/sh\n"), Group: []byte("root:x:0:\n")}
	tests := []struct {
		app  App
		cfg  image.Config
		want string
	}{
		{App{}, image.Config{}, `apps[0].exec: required: image example.test/app:1 has neither Entrypoint nor Cmd`},
		{App{User: "nobody"}, image.Config{Cmd: []string{"x"}}, `apps[0].user "nobody": no such user in the image's /etc/passwd`},
		{App{Group: "staff"}, image.Config{Cmd: []string{"x"}}, `apps[0].group "staff": no such group in the image's /etc/group`},
		{App{}, image.Config{Cmd: []string{"x"}, User: "web"}, `image example.test/app:1: its config's User "web": no such user in the image's /etc/passwd`},
		{App{}, image.Config{Cmd: []string{"x"}, User: "0:web"}, `image example.test/app:1: its config's User "web": no such group in the image's /etc/group`},
		// runAsNonRoot, as the kubelet checks it.
		{App{RunAsNonRoot: true}, image.Config{Cmd: []string{"x"}}, `apps[0].runAsNonRoot: true, but image example.test/app:1 runs as root (its config's User is "")`},
		{App{RunAsNonRoot: true}, image.Config{Cmd: []string{"x"}, User: "0:0"}, `apps[0].runAsNonRoot: true, but image example.test/app:1 runs as root (its config's User is "0:0")`},
		{App{RunAsNonRoot: true}, image.Config{Cmd: []string{"x"}, User: "root"}, `apps[0].runAsNonRoot: true, but image example.test/app:1's config's User "root" is a name, not a number: it cannot be verified to be other than root`},
		{App{RunAsNonRoot: true, User: "root"}, image.Config{Cmd: []string{"x"}, User: "7"}, `apps[0].runAsNonRoot: true, but its user "root" is root`},
	}
	for _, tt := range tests {
		a := tt.app
		a.Image = "example.test/app:1"
		_, err := MergeImage("apps[0]", &a, tt.cfg, files)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%+v with %+v: got %v, want %s", tt.app, tt.cfg, err, tt.want)
		}
	}
}

// TestPullPolicyDefault checks Kubernetes' default imagePullPolicy.
func TestPullPolicyDefault(t *testing.T) {
	for ref, want := range map[string]image.PullPolicy{
		"busybox":                  image.PullAlways,
		"busybox:latest":           image.PullAlways,
		"busybox:1.36":             image.PullIfNotPresent,
		"localhost:5000/busybox":   image.PullAlways,
		"localhost:5000/busybox:1": image.PullIfNotPresent,
		"busybox@sha256:" + strings.Repeat("a", 64): image.PullIfNotPresent,
	} {
		if got := (&App{Image: ref}).PullPolicy(); got != want {
			t.Errorf("%s: got %s, want %s", ref, got, want)
		}
	}
	if got := (&App{Image: "busybox", ImagePullPolicy: "Never"}).PullPolicy(); got != image.PullNever {
		t.Errorf("an app's own policy: got %s", got)
	}
}
