package pod

import (
	"fmt"
	"slices"
)

// CapabilityNames are the Linux capabilities by number, named without
// CAP_, as Kubernetes spells them.
var CapabilityNames = []string{
	"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID",
	"SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW", "IPC_LOCK", "IPC_OWNER",
	"SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT", "SYS_ADMIN", "SYS_BOOT", "SYS_NICE",
	"SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP",
	"MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF",
	"CHECKPOINT_RESTORE",
}

// capabilities checks an app's capabilities: names of CapabilityNames.
func (p *problems) capabilities(path string, caps []string) {
	for i, c := range caps {
		if !slices.Contains(CapabilityNames, c) {
			p.add(fmt.Sprintf("%s[%d]", path, i), c, "is not a Linux capability (named without CAP_, as CHOWN or NET_ADMIN)")
		}
	}
}
