package pod

import (
	"fmt"
	"slices"

	"github.com/unitrun/unitrun/pod/appexec"
)

// CapabilityNames is [appexec.CapabilityNames].
var CapabilityNames = appexec.CapabilityNames

// capabilities checks an app's capabilities: names of CapabilityNames.
func (p *problems) capabilities(path string, caps []string) {
	for i, c := range caps {
		if !slices.Contains(CapabilityNames, c) {
			p.add(fmt.Sprintf("%s[%d]", path, i), c, "is not a Linux capability (named without CAP_, as CHOWN or NET_ADMIN)")
		}
	}
}
