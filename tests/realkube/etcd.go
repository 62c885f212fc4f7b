package main

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
)

// runEtcd runs one embedded etcd member until SIGTERM or SIGINT.
func runEtcd(args []string) int {
	fs := flag.NewFlagSet("etcd", flag.ExitOnError)
	dataDir := fs.String("data-dir", "", "where etcd keeps its data (required)")
	clientURL := fs.String("listen-client-url", "", "http://127.0.0.1:PORT for clients (required)")
	peerURL := fs.String("listen-peer-url", "", "http://127.0.0.1:PORT for peers (required)")
	logFile := fs.String("log-file", "stderr", "where etcd logs")
	_ = fs.Parse(args)
	if *dataDir == "" || *clientURL == "" || *peerURL == "" {
		fmt.Fprintln(os.Stderr, "realkube etcd: --data-dir, --listen-client-url and --listen-peer-url are required")
		return 2
	}
	client, err := url.Parse(*clientURL)
	if err != nil {
		fmt.Fprintf(os.Stderr, "realkube etcd: %v\n", err)
		return 2
	}
	peer, err := url.Parse(*peerURL)
	if err != nil {
		fmt.Fprintf(os.Stderr, "realkube etcd: %v\n", err)
		return 2
	}

	cfg := embed.NewConfig()
	cfg.Name = "realkube"
	cfg.Dir = *dataDir
	cfg.ListenClientUrls = []url.URL{*client}
	cfg.AdvertiseClientUrls = []url.URL{*client}
	cfg.ListenPeerUrls = []url.URL{*peer}
	cfg.AdvertisePeerUrls = []url.URL{*peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "warn"
	cfg.LogOutputs = []string{*logFile}
	// A test cluster: losing data on a power cut is fine, waiting for fsync is not.
	cfg.UnsafeNoFsync = true
	// kube-apiserver compacts etcd itself (--etcd-compaction-interval); so
	// does `realkube compact`.
	cfg.AutoCompactionRetention = "0"

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "realkube etcd: %v\n", err)
		return 1
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		fmt.Fprintln(os.Stderr, "realkube etcd: not ready within 60s")
		return 1
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-stop:
		return 0
	case err := <-e.Err():
		fmt.Fprintf(os.Stderr, "realkube etcd: %v\n", err)
		return 1
	}
}

// runCompact compacts etcd to its current revision (or --revision), so that
// every watch or continue token from before it gets 410 Gone from
// kube-apiserver (where it reaches etcd rather than the watch cache). Prints
// the revision.
func runCompact(args []string) int {
	fs := flag.NewFlagSet("compact", flag.ExitOnError)
	endpoint := fs.String("etcd", "", "etcd client URL (required)")
	revision := fs.Int64("revision", 0, "compact to this revision instead of the current one")
	_ = fs.Parse(args)
	if *endpoint == "" {
		fmt.Fprintln(os.Stderr, "realkube compact: --etcd is required")
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rev, err := compact(ctx, *endpoint, *revision)
	if err != nil {
		fmt.Fprintf(os.Stderr, "realkube compact: %v\n", err)
		return 1
	}
	fmt.Println(rev)
	return 0
}

func compact(ctx context.Context, endpoint string, revision int64) (int64, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{endpoint},
		DialTimeout: 10 * time.Second,
		Context:     ctx,
	})
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	rev := revision
	if rev == 0 {
		// Any read returns the store's current revision in its header.
		resp, err := cli.Get(ctx, "/realkube/compact-probe")
		if err != nil {
			return 0, err
		}
		rev = resp.Header.Revision
	}
	if _, err := cli.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		return 0, err
	}
	return rev, nil
}
