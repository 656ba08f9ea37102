package unit

import (
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// The name tables of systemd 252 that its property parsers look values up
// in; a value's index is its number unless said otherwise.

var logLevels = []string{"emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"}

var logFacilities = []string{
	"kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp", "cron", "authpriv", "ftp",
	16: "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7",
}

var schedPolicies = []string{0: "other", 1: "fifo", 2: "rr", 3: "batch", 5: "idle"}

var ioprioClasses = []string{"none", "realtime", "best-effort", "idle"}

var numaPolicies = []string{"default", "preferred", "bind", "interleave", "local"}

// secureBits are the names of the bits of SecureBits=.
var secureBits = []string{"noroot", "noroot-locked", "no-setuid-fixup", "no-setuid-fixup-locked", "keep-caps", "keep-caps-locked"}

var coredumpFilters = []string{
	"private-anonymous", "shared-anonymous", "private-file-backed", "shared-file-backed", "elf-headers",
	"private-huge", "shared-huge", "private-dax", "shared-dax",
}

// capabilities are the Linux capability names without "cap_", in the order
// of their numbers.
var capabilities = strings.Fields(`chown dac_override dac_read_search fowner fsetid kill setgid setuid setpcap
	linux_immutable net_bind_service net_broadcast net_admin net_raw ipc_lock ipc_owner sys_module sys_rawio
	sys_chroot sys_ptrace sys_pacct sys_admin sys_boot sys_nice sys_resource sys_time sys_tty_config mknod lease
	audit_write audit_control setfcap mac_override mac_admin syslog wake_alarm block_suspend audit_read perfmon
	bpf checkpoint_restore`)

// namespaces are the clone flags of the namespace names.
var namespaces = map[string]uint64{
	"cgroup": unix.CLONE_NEWCGROUP, "ipc": unix.CLONE_NEWIPC, "net": unix.CLONE_NEWNET, "mnt": unix.CLONE_NEWNS,
	"pid": unix.CLONE_NEWPID, "user": unix.CLONE_NEWUSER, "uts": unix.CLONE_NEWUTS, "time": unix.CLONE_NEWTIME,
}

// namespacesAll is systemd 252's NAMESPACE_FLAGS_ALL, which leaves out
// the time namespace.
const namespacesAll = unix.CLONE_NEWCGROUP | unix.CLONE_NEWIPC | unix.CLONE_NEWNET | unix.CLONE_NEWNS |
	unix.CLONE_NEWPID | unix.CLONE_NEWUSER | unix.CLONE_NEWUTS

// exitStatuses are the names of exit statuses (SuccessExitStatus= and the
// like).
var exitStatuses = func() []string {
	names := make([]string, 256)
	copy(names, []string{"SUCCESS", "FAILURE", "INVALIDARGUMENT", "NOTIMPLEMENTED", "NOPERMISSION", "NOTINSTALLED", "NOTCONFIGURED", "NOTRUNNING"})
	copy(names[200:], strings.Fields(`CHDIR NICE FDS EXEC MEMORY LIMITS OOM_ADJUST SIGNAL_MASK STDIN STDOUT CHROOT
		IOPRIO TIMERSLACK SECUREBITS SETSCHEDULER CPUAFFINITY GROUP USER CAPABILITIES CGROUP SETSID CONFIRM STDERR
		_ PAM NETWORK NAMESPACE NO_NEW_PRIVILEGES SECCOMP SELINUX_CONTEXT PERSONALITY APPARMOR ADDRESS_FAMILIES
		RUNTIME_DIRECTORY _ CHOWN SMACK_PROCESS_LABEL KEYRING STATE_DIRECTORY CACHE_DIRECTORY LOGS_DIRECTORY
		CONFIGURATION_DIRECTORY NUMA_POLICY CREDENTIALS _ BPF`))
	names[255] = "EXCEPTION"
	for i, n := range names {
		if n == "_" {
			names[i] = ""
		}
	}
	return names
}()

// conditions are the kinds of Condition*= and Assert*=.
var conditions = strings.Fields(`Architecture Firmware Virtualization Host KernelCommandLine KernelVersion
	Credential Security Capability ACPower NeedsUpdate FirstBoot PathExists PathExistsGlob PathIsDirectory
	PathIsSymbolicLink PathIsMountPoint PathIsReadWrite PathIsEncrypted DirectoryNotEmpty FileNotEmpty
	FileIsExecutable User Group ControlGroupController CPUs Memory Environment CPUFeature OSRelease
	MemoryPressure CPUPressure IOPressure`)

// errnoByName maps errno names (EPERM, ...) to their numbers.
var errnoByName = sync.OnceValue(func() map[string]int32 {
	m := map[string]int32{"EWOULDBLOCK": int32(unix.EWOULDBLOCK), "EDEADLOCK": int32(unix.EDEADLOCK), "ENOTSUP": int32(unix.ENOTSUP)}
	for n := 1; n < 4096; n++ {
		if name := unix.ErrnoName(unix.Errno(n)); name != "" {
			m[name] = int32(n)
		}
	}
	return m
})

// maxNUMANode is the highest NUMA node of this machine, as systemd's
// numa_max_node finds it (1023 if it cannot tell).
func maxNUMANode() int {
	entries, err := os.ReadDir("/sys/devices/system/node")
	if err != nil {
		return 1023
	}
	max := 0
	for _, e := range entries {
		if n, ok := strings.CutPrefix(e.Name(), "node"); ok && e.IsDir() {
			if i, err := safeAtoi(n); err == nil && int(i) > max {
				max = int(i)
			}
		}
	}
	return max
}
