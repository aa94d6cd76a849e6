// Command grpc_health_probe asks a gRPC server's health service whether it
// serves, as OLM's catalog pods' probes run it (`grpc_health_probe
// -addr=:50051 -rpc-timeout=5s`): exit 0 when SERVING, 1 otherwise.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func main() {
	addr := flag.String("addr", "", "host:port of the server (\":50051\" means this host)")
	service := flag.String("service", "", "the service to ask about (empty: the server)")
	timeout := flag.Duration("rpc-timeout", time.Second, "how long the health call may take")
	flag.Duration("connect-timeout", time.Second, "kept for compatibility; the rpc timeout bounds the whole probe")
	flag.Parse()
	if err := probe(*addr, *service, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "grpc_health_probe:", err)
		os.Exit(1)
	}
	fmt.Println("status: SERVING")
}

func probe(addr, service string, timeout time.Duration) error {
	if addr == "" {
		return fmt.Errorf("-addr is required")
	}
	if strings.HasPrefix(addr, ":") {
		addr = "localhost" + addr
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return fmt.Errorf("health check of %s: %w", addr, err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("%s is %s", addr, resp.GetStatus())
	}
	return nil
}
