package api

// DefaultSocket is the daemon's HTTP/JSON socket: where the shipped
// unitrun.socket unit listens, where the daemon binds when systemd passes
// no socket and no --socket is given, and where a client calls by
// default.
const DefaultSocket = "/run/unitrun/api.sock"

// DefaultSeqpacketSocket is the daemon's SOCK_SEQPACKET socket: where the
// shipped unitrun-argv.socket unit listens, and where the daemon binds
// when systemd passes no socket and no --seqpacket is given.
const DefaultSeqpacketSocket = "/run/unitrun/argv.sock"

// MaxPage is the most records a page of the job listing holds: the
// default and the largest ?limit= of GET /v1/jobs, and the page the D-Bus
// front end lists.
const MaxPage = 100
