package podrun

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/unitrun/unitrun/pod"
)

// A gRPC health check is one unary call of the gRPC Health Checking
// Protocol, spoken here with net/http's own HTTP/2 without TLS (prior
// knowledge, as gRPC's insecure credentials speak it) and the two
// protobuf fields it needs: google.golang.org/grpc would add its package
// inits to every unitrun process for this one probe kind
// (docs/performance.md, "gRPC probes").

// grpcTransport speaks HTTP/2 without TLS and keeps no connection between
// checks: each check dials anew, as the kubelet's does.
var grpcTransport = func() *http.Transport {
	t := &http.Transport{Protocols: new(http.Protocols), DisableKeepAlives: true}
	t.Protocols.SetUnencryptedHTTP2(true)
	return t
}()

// grpc status codes a check tells apart.
const (
	grpcOK               = 0
	grpcDeadlineExceeded = 4
	grpcUnimplemented    = 12
)

// servingStatus names the values of HealthCheckResponse.status.
var servingStatus = []string{"UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN"}

// maxGRPCAnswer bounds how much of an answer a check reads.
const maxGRPCAnswer = 64 << 10

// grpcCheck calls grpc.health.v1.Health/Check for p.Service on
// 127.0.0.1:p.Port within timeout (ctx's deadline) and succeeds if the
// answer is SERVING. Its errors say what the kubelet's grpc prober says.
func grpcCheck(ctx context.Context, p *pod.GRPCProbe, timeout time.Duration) (note string, err error) {
	var msg []byte
	if p.Service != "" {
		msg = binary.AppendUvarint([]byte{0x0a}, uint64(len(p.Service)))
		msg = append(msg, p.Service...)
	}
	body := binary.BigEndian.AppendUint32([]byte{0}, uint32(len(msg)))
	body = append(body, msg...)
	addr := localAddr(p.Port)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/grpc.health.v1.Health/Check", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("TE", "trailers")
	req.Header.Set("User-Agent", "unitrun-probe")
	if d, ok := ctx.Deadline(); ok {
		req.Header.Set("Grpc-Timeout", strconv.FormatInt(max(time.Until(d).Milliseconds(), 1), 10)+"m")
	}
	resp, err := grpcTransport.RoundTrip(req)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fmt.Errorf("failed to connect service %q within %v: %v", addr, timeout, err)
	}
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxGRPCAnswer))
	resp.Body.Close()
	if err != nil {
		return "", fmt.Errorf("health rpc probe failed: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("health rpc probe failed: HTTP status %d, not a gRPC server", resp.StatusCode)
	}
	// A call that fails at once has its status in the headers alone.
	code, message := resp.Trailer.Get("Grpc-Status"), resp.Trailer.Get("Grpc-Message")
	if code == "" {
		code, message = resp.Header.Get("Grpc-Status"), resp.Header.Get("Grpc-Message")
	}
	if m, err := url.PathUnescape(message); err == nil {
		message = m
	}
	switch n, err := strconv.Atoi(code); {
	case err != nil:
		return "", fmt.Errorf("health rpc probe failed: no gRPC status in the answer")
	case n == grpcUnimplemented:
		return "", fmt.Errorf("this server does not implement the grpc health protocol (grpc.health.v1.Health): %s", message)
	case n == grpcDeadlineExceeded:
		return "", context.DeadlineExceeded
	case n != grpcOK:
		return "", fmt.Errorf("health rpc probe failed: code %d: %s", n, message)
	}
	status, err := healthStatus(answer)
	if err != nil {
		return "", fmt.Errorf("health rpc probe failed: %v", err)
	}
	if status != 1 {
		name := strconv.FormatUint(status, 10)
		if status < uint64(len(servingStatus)) {
			name = servingStatus[status]
		}
		return "", fmt.Errorf("service unhealthy (responded with %q)", name)
	}
	return "", nil
}

// healthStatus reads HealthCheckResponse.status (field 1, a varint; 0,
// UNKNOWN, when absent) from a gRPC answer: one uncompressed message
// behind its five-byte prefix.
func healthStatus(answer []byte) (uint64, error) {
	if len(answer) < 5 || answer[0] != 0 || int(binary.BigEndian.Uint32(answer[1:5])) != len(answer)-5 {
		return 0, errors.New("the answer is not one uncompressed gRPC message")
	}
	var status uint64
	for b := answer[5:]; len(b) > 0; {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, errors.New("the answer is not a HealthCheckResponse")
		}
		b = b[n:]
		switch key & 7 {
		case 0: // varint
			v, n := binary.Uvarint(b)
			if n <= 0 {
				return 0, errors.New("the answer is not a HealthCheckResponse")
			}
			if key>>3 == 1 {
				status = v
			}
			b = b[n:]
		case 2: // length-delimited
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return 0, errors.New("the answer is not a HealthCheckResponse")
			}
			b = b[n+int(l):]
		case 1, 5: // fixed64, fixed32
			w := map[uint64]int{1: 8, 5: 4}[key&7]
			if len(b) < w {
				return 0, errors.New("the answer is not a HealthCheckResponse")
			}
			b = b[w:]
		default:
			return 0, errors.New("the answer is not a HealthCheckResponse")
		}
	}
	return status, nil
}
