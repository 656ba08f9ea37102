// Package api holds the wire types of the unitrun host API, and nothing
// else: the job record as the daemon serves it, the job states, the error
// codes and the error body, the body of a call, how an op is described, and
// the SOCK_SEQPACKET request and response packets. It imports the standard
// library only, so that a client of the daemon (package client) links
// none of the daemon's dependencies.
package api
