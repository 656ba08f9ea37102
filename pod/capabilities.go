package pod

import (
	"fmt"
	"slices"

	"github.com/unitrun/unitrun/pod/appexec"
)

// capabilities checks an app's capabilities: names of appexec.CapabilityNames.
func (p *problems) capabilities(path string, caps []string) {
	for i, c := range caps {
		if !slices.Contains(appexec.CapabilityNames, c) {
			p.add(fmt.Sprintf("%s[%d]", path, i), c, "is not a Linux capability (named without CAP_, as CHOWN or NET_ADMIN)")
		}
	}
}
