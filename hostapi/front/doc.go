// Package front holds the unitrun daemon's three front ends, each an
// adapter over core.Core and the wire types of package api: HTTP/JSON on
// a unix stream socket (NewHTTPServer, Server.ServeHTTP), the
// SOCK_SEQPACKET wire format on a unix seqpacket socket
// (Server.ServeSeqpacket), and D-Bus, org.unitrun.Ops1 (ServeDBus). Each
// authorizes a call by its caller's credentials as the kernel or the bus
// reports them (PeerCaller), and the two sockets hold every caller uid
// to the connection limits of the daemon's config (Server). What a
// caller may do and see is the Core's to decide.
package front
