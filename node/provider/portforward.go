package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
)

// PortForward connects stream (kubectl port-forward's, through the API
// server) to port of Pod namespace/name, as the kubelet's container
// runtime does in the Pod's network namespace: every Pod of this node has
// the host's network (an isolated one too: it keeps the host's network
// namespace), so the port is the host's, on localhost. It returns once the
// Pod's side has closed the connection, or ctx ends.
func (p *Provider) PortForward(ctx context.Context, namespace, name string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	if _, err := p.running(namespace, name); err != nil {
		return err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort("localhost", strconv.Itoa(int(port))))
	if err != nil {
		return fmt.Errorf("pod %s: nothing answers on port %d: %w", key(namespace, name), port, err)
	}
	defer conn.Close()
	go func() {
		// What the client sends, then its end, as the runtime passes them.
		io.Copy(conn, stream)
		conn.(*net.TCPConn).CloseWrite()
	}()
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(stream, conn)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, net.ErrClosed) {
			return fmt.Errorf("pod %s, port %d: %w", key(namespace, name), port, err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
