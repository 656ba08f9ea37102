// Package busframe is the stream between godbus and a systemd manager's
// private socket. It frames the D-Bus messages it reads by their headers'
// lengths, leaves out the signals no one waits for and cuts the properties
// no one reads from the rest (before godbus decodes them), and attaches
// unix fds, which godbus cannot pass on a stream, to the message that
// declares them. It relies on the D-Bus authentication lines godbus
// writes; godbus_test.go fails if a godbus upgrade changes them.
package busframe
