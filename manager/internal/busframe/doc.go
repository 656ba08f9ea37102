// Package busframe is the stream between godbus and a systemd manager's
// private socket or a bus. It authenticates in one round trip, as sd-bus
// does, where godbus takes four; it frames the D-Bus messages it reads by
// their headers' lengths, leaves out the signals no one waits for and cuts
// the properties no one reads from the rest (before godbus decodes them),
// and attaches unix fds, which godbus cannot pass on a stream, to the
// message that declares them. It answers godbus's own authentication
// lines itself; godbus_test.go fails if a godbus upgrade changes them.
package busframe
