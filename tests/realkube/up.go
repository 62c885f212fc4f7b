package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The users of the static token file. The admin is in system:masters; the
// limited user has nothing bound until a test binds a role to it.
const (
	adminUser   = "krply-admin"
	limitedUser = "krply-limited"
	// kube-controller-manager's own identity, bound by the RBAC bootstrap to
	// the system:kube-controller-manager ClusterRole; with
	// --use-service-account-credentials each controller then acts as its own
	// service account in kube-system, as on a kubeadm cluster.
	controllerManagerUser = "system:kube-controller-manager"
)

// auditPolicy logs every write with its request and response, except that
// Secrets and service-account tokens are kept at Metadata level (their bodies
// must never reach a log), and so are ConfigMaps (as many clusters log them,
// which gives the tests real Metadata-level events) outside namespaces shop
// and pay, where the truth checker's histories play and its oracle needs
// every write's resourceVersion (tests/it/truth/real.rs); and leaves out
// reads, Events and leases.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: None
    verbs: ["get", "list", "watch"]
  - level: None
    resources:
      - group: ""
        resources: ["events"]
      - group: "events.k8s.io"
      - group: "coordination.k8s.io"
  - level: RequestResponse
    namespaces: ["shop", "pay"]
    resources:
      - group: ""
        resources: ["configmaps"]
  - level: Metadata
    resources:
      - group: ""
        resources: ["secrets", "serviceaccounts/token", "configmaps"]
      - group: "authentication.k8s.io"
      - group: "authorization.k8s.io"
  - level: RequestResponse
`

// Ready is what `up` writes to DIR/ready.json once every component answers.
type Ready struct {
	// The kube-apiserver's URL, https://127.0.0.1:PORT.
	Server string `json:"server"`
	// gitVersion from the server's /version.
	Version    string `json:"version"`
	Kubeconfig string `json:"kubeconfig"`
	CAFile     string `json:"ca_file"`
	Etcd       string `json:"etcd"`
	AuditLog   string `json:"audit_log"`
	// "admin" and "limited": their user names and bearer tokens.
	Users map[string]User `json:"users"`
	// The process to signal: SIGTERM stops everything, SIGUSR1 restarts
	// kube-apiserver (realkube restart-apiserver).
	Pid  int               `json:"pid"`
	Logs map[string]string `json:"logs"`
	// How many times kube-apiserver was restarted: "0\n" at first, rewritten
	// (atomically) once each new kube-apiserver answers /readyz.
	RestartsFile string `json:"restarts_file"`
	// While this file exists, the `expiring` user's exec plugin fails with
	// its text (or "error: SSO session expired" when it is empty).
	TokenFailFile string `json:"token_fail_file"`
	// One line per token the exec plugin minted: "<minted> <expires>", RFC 3339.
	TokensMintedFile string `json:"tokens_minted_file"`
}

type User struct {
	Name  string `json:"name"`
	Token string `json:"token"`
}

type child struct {
	name string
	args []string
	cmd  *exec.Cmd
	log  string
	// done is closed once the process has exited; err then says how.
	done chan struct{}
	err  error
	// retired is set before the child is stopped on purpose, so that its
	// exit is not taken for a crash.
	retired atomic.Bool
}

func runUp(args []string) int {
	fs := flag.NewFlagSet("up", flag.ExitOnError)
	dir := fs.String("dir", "", "a directory of its own for data, certificates, kubeconfig, logs and ready.json (required)")
	ttl := fs.Duration("ttl", 30*time.Minute, "stop everything after this long")
	lifeline := fs.Bool("lifeline", false, "stop everything when standard input reaches end of file (the parent is gone)")
	compaction := fs.Duration("etcd-compaction-interval", 30*time.Second, "kube-apiserver's etcd compaction interval")
	startTimeout := fs.Duration("start-timeout", 5*time.Minute, "give up when the control plane is not ready by then")
	tokenTTL := fs.Duration("token-ttl", 10*time.Minute, "how long the tokens of the `expiring` user's exec plugin are valid")
	_ = fs.Parse(args)
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "realkube up: --dir is required")
		return 2
	}
	if *tokenTTL < time.Second {
		fmt.Fprintln(os.Stderr, "realkube up: --token-ttl must be at least 1s")
		return 2
	}
	// Children get SIGKILL when the thread that started them ends (Pdeathsig):
	// start them all from the main thread, which lives as long as the process
	// (restarts of kube-apiserver included: they run on this goroutine).
	runtime.LockOSThread()

	u := &launcher{dir: *dir, tokenTTL: *tokenTTL, died: make(chan *child, 8)}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	// Caught from the start, as its default action would end the process; a
	// request that comes while starting is served once ready.
	restart := make(chan os.Signal, 1)
	signal.Notify(restart, restartSignal)
	parentGone := make(chan struct{})
	if *lifeline {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			close(parentGone)
		}()
	}

	ready, err := u.start(*ttl, *compaction, *startTimeout, stop, parentGone)
	if err != nil {
		fmt.Fprintf(os.Stderr, "realkube up: %v\n", err)
		u.stopAll()
		return 1
	}
	fmt.Fprintf(os.Stderr, "realkube up: kube-apiserver %s at %s, ready in %s\n", ready.Version, ready.Server, ready.Logs["elapsed"])
	delete(ready.Logs, "elapsed")

	code := u.serve(*ttl, stop, parentGone, restart)
	u.stopAll()
	return code
}

// serve runs until told to stop (0) or a component dies (1), restarting
// kube-apiserver on request meanwhile.
func (u *launcher) serve(ttl time.Duration, stop <-chan os.Signal, parentGone <-chan struct{}, restart <-chan os.Signal) int {
	quit, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
		case <-parentGone:
		case <-time.After(ttl):
			fmt.Fprintf(os.Stderr, "realkube up: stopping after --ttl %s\n", ttl)
		}
		cancel()
	}()
	for {
		select {
		case <-quit.Done():
			return 0
		case c := <-u.died:
			fmt.Fprintf(os.Stderr, "realkube up: %s exited: %v (log: %s)\n%s", c.name, c.err, c.log, tail(c.log, 20))
			return 1
		case <-restart:
			if err := u.restartAPIServer(quit); err != nil {
				if quit.Err() != nil {
					return 0
				}
				fmt.Fprintf(os.Stderr, "realkube up: restarting kube-apiserver: %v\n", err)
				return 1
			}
		}
	}
}

type launcher struct {
	dir      string
	tokenTTL time.Duration
	children []*child
	// died gets the children that exit without being stopped on purpose.
	died chan *child
	// apiserverReady says whether kube-apiserver answers /readyz.
	apiserverReady func() bool
	restarts       int
}

// find is the running child of that name.
func (u *launcher) find(name string) *child {
	for _, c := range u.children {
		if c.name == name {
			return c
		}
	}
	return nil
}

// replace puts c (just spawned, so last) where old was, so that stopAll keeps
// stopping the children newest first in the order they were started.
func (u *launcher) replace(old, c *child) {
	kept := u.children[:0]
	for _, x := range u.children {
		switch x {
		case old:
			kept = append(kept, c)
		case c:
		default:
			kept = append(kept, x)
		}
	}
	u.children = kept
}

func (u *launcher) spawn(name string, args ...string) (*child, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(u.dir, "logs", name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, append([]string{name}, args...)...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	logFile.Close()
	c := &child{name: name, args: args, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
		if !c.retired.Load() {
			select {
			case u.died <- c:
			default: // the first death is the one that counts
			}
		}
	}()
	u.children = append(u.children, c)
	return c, nil
}

// stopAll stops the children newest first.
func (u *launcher) stopAll() {
	for i := len(u.children) - 1; i >= 0; i-- {
		u.children[i].stop(10 * time.Second)
	}
}

// stop sends SIGTERM, then SIGKILL after grace, and says whether the child
// has exited (within a further 5 s after SIGKILL).
func (c *child) stop(grace time.Duration) bool {
	c.retired.Store(true)
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
		return true
	case <-time.After(grace):
	}
	_ = c.cmd.Process.Kill()
	select {
	case <-c.done:
		return true
	case <-time.After(5 * time.Second):
		return false
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (u *launcher) start(ttl, compaction, startTimeout time.Duration, stop <-chan os.Signal, parentGone <-chan struct{}) (*Ready, error) {
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	go func() {
		select {
		case <-stop:
		case <-parentGone:
		case <-ctx.Done():
		}
		cancel()
	}()

	for _, d := range []string{"logs", "etcd", "pki"} {
		if err := os.MkdirAll(filepath.Join(u.dir, d), 0o700); err != nil {
			return nil, err
		}
	}
	certs, err := newPKI(filepath.Join(u.dir, "pki"), ttl)
	if err != nil {
		return nil, fmt.Errorf("certificates: %w", err)
	}
	tokens := map[string]string{}
	for _, who := range []string{adminUser, limitedUser, controllerManagerUser} {
		if tokens[who], err = newToken(); err != nil {
			return nil, err
		}
	}
	tokenFile := filepath.Join(u.dir, "pki", "tokens.csv")
	csv := fmt.Sprintf("%s,%s,%s,\"system:masters\"\n%s,%s,%s\n%s,%s,%s\n",
		tokens[adminUser], adminUser, "uid-"+adminUser,
		tokens[limitedUser], limitedUser, "uid-"+limitedUser,
		tokens[controllerManagerUser], controllerManagerUser, "uid-kcm")
	if err := os.WriteFile(tokenFile, []byte(csv), 0o600); err != nil {
		return nil, err
	}
	policyFile := filepath.Join(u.dir, "audit-policy.yaml")
	if err := os.WriteFile(policyFile, []byte(auditPolicy), 0o600); err != nil {
		return nil, err
	}
	webhookConfig, err := u.startTokenWebhook(certs)
	if err != nil {
		return nil, fmt.Errorf("token webhook: %w", err)
	}

	// etcd
	var ports [3]int
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return nil, err
		}
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	etcd, err := u.spawn("etcd",
		"--data-dir", filepath.Join(u.dir, "etcd"),
		"--listen-client-url", etcdURL,
		"--listen-peer-url", fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
	)
	if err != nil {
		return nil, err
	}
	if err := waitFor(ctx, etcd, "etcd", func() bool {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", ports[0]), time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}); err != nil {
		return nil, err
	}

	// kube-apiserver
	server := fmt.Sprintf("https://127.0.0.1:%d", ports[2])
	auditLog := filepath.Join(u.dir, "audit.log")
	apiserver, err := u.spawn("apiserver",
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(ports[2]),
		"--tls-cert-file="+certs.ServingCert,
		"--tls-private-key-file="+certs.ServingKey,
		"--client-ca-file="+certs.CACert,
		"--token-auth-file="+tokenFile,
		// The `expiring` user's tokens (token.go). kube-apiserver asks the
		// webhook only for tokens that are neither static nor service
		// accounts'. A cache TTL of 0 bypasses the webhook's cache; but
		// kube-apiserver also keeps every successful token authentication
		// for 10 s (TokenSuccessCacheTTL, which no flag sets), so a token
		// used shortly before its expiry is accepted up to 10 s past it.
		"--authentication-token-webhook-config-file="+webhookConfig,
		"--authentication-token-webhook-version=v1",
		"--authentication-token-webhook-cache-ttl=0s",
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+certs.SAPublic,
		"--service-account-signing-key-file="+certs.SAPrivate,
		"--service-cluster-ip-range=10.96.0.0/16",
		// The built-in `kubernetes` Service would point at 127.0.0.1, which
		// Endpoints refuse; nothing here routes to it anyway.
		"--endpoint-reconciler-type=none",
		"--audit-log-path="+auditLog,
		"--audit-policy-file="+policyFile,
		"--audit-log-format=json",
		// Real 410s in seconds: etcd forgets old revisions quickly, and
		// ConfigMaps bypass the watch cache, so a watch resumed from a
		// compacted resourceVersion reaches etcd. (Non-zero watch cache sizes
		// are ignored since Kubernetes 1.25: caches size themselves.)
		"--etcd-compaction-interval="+compaction.String(),
		"--watch-cache-sizes=configmaps#0",
		"--profiling=false",
		// A stop (and a restart) in seconds: by default net/http's Shutdown
		// waits up to --request-timeout (60 s) for open watches, which
		// never end by themselves. With this, requests that come while the
		// in-flight ones drain get 429 with Retry-After, then open
		// connections get 2 s.
		"--shutdown-send-retry-after=true",
	)
	if err != nil {
		return nil, err
	}
	client, err := httpsClient(certs.CACert)
	if err != nil {
		return nil, err
	}
	admin := tokens[adminUser]
	u.apiserverReady = func() bool {
		code, _, err := get(client, server+"/readyz", admin)
		return err == nil && code == http.StatusOK
	}
	if err := waitFor(ctx, apiserver, "kube-apiserver /readyz", u.apiserverReady); err != nil {
		return nil, err
	}
	_, body, err := get(client, server+"/version", admin)
	if err != nil {
		return nil, err
	}
	var version struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := json.Unmarshal(body, &version); err != nil {
		return nil, fmt.Errorf("/version: %w", err)
	}

	// kubeconfigs
	kubeconfig := filepath.Join(u.dir, "kubeconfig")
	expiring, err := u.tokenPluginUser()
	if err != nil {
		return nil, err
	}
	if err := writeKubeconfig(kubeconfig, server, certs.CACert, map[string]*clientcmdapi.AuthInfo{
		"admin":    tokenUser(tokens[adminUser]),
		"limited":  tokenUser(tokens[limitedUser]),
		"expiring": expiring,
	}, "admin"); err != nil {
		return nil, err
	}
	kcmKubeconfig := filepath.Join(u.dir, "pki", "controller-manager.kubeconfig")
	if err := writeKubeconfig(kcmKubeconfig, server, certs.CACert, map[string]*clientcmdapi.AuthInfo{
		"controller-manager": tokenUser(tokens[controllerManagerUser]),
	}, "controller-manager"); err != nil {
		return nil, err
	}

	// kube-controller-manager: Deployments get ReplicaSets and status,
	// namespaces get their default ServiceAccount and root CA, and deleted
	// namespaces finalize.
	kcm, err := u.spawn("controller-manager",
		"--kubeconfig="+kcmKubeconfig,
		"--leader-elect=false",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file="+certs.SAPrivate,
		"--root-ca-file="+certs.CACert,
		"--secure-port=0",
		"--profiling=false",
	)
	if err != nil {
		return nil, err
	}
	if err := waitFor(ctx, kcm, "kube-controller-manager (the default ServiceAccount of namespace default)", func() bool {
		code, _, err := get(client, server+"/api/v1/namespaces/default/serviceaccounts/default", admin)
		return err == nil && code == http.StatusOK
	}); err != nil {
		return nil, err
	}

	ready := &Ready{
		Server:     server,
		Version:    version.GitVersion,
		Kubeconfig: kubeconfig,
		CAFile:     certs.CACert,
		Etcd:       etcdURL,
		AuditLog:   auditLog,
		Users: map[string]User{
			"admin":   {Name: adminUser, Token: tokens[adminUser]},
			"limited": {Name: limitedUser, Token: tokens[limitedUser]},
		},
		Pid: os.Getpid(),
		Logs: map[string]string{
			"etcd": etcd.log, "apiserver": apiserver.log, "controller-manager": kcm.log,
		},
		RestartsFile:     restartsFile(u.dir),
		TokenFailFile:    tokenFailFile(u.dir),
		TokensMintedFile: tokensMintedFile(u.dir),
	}
	if err := writeFileAtomic(ready.RestartsFile, "0\n"); err != nil {
		return nil, err
	}
	if err := writeFileAtomic(ready.TokensMintedFile, ""); err != nil {
		return nil, err
	}
	data, err := json.MarshalIndent(ready, "", "  ")
	if err != nil {
		return nil, err
	}
	tmp := filepath.Join(u.dir, "ready.json.tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, filepath.Join(u.dir, "ready.json")); err != nil {
		return nil, err
	}
	ready.Logs["elapsed"] = time.Since(began).Round(100 * time.Millisecond).String()
	return ready, nil
}

// waitFor polls check until it holds, the child exits, or ctx ends.
func waitFor(ctx context.Context, c *child, what string, check func() bool) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if check() {
			return nil
		}
		select {
		case <-c.done:
			return fmt.Errorf("%s exited before %s was ready: %v\n%s", c.name, what, c.err, tail(c.log, 30))
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %v\n%s", what, ctx.Err(), tail(c.log, 30))
		case <-tick.C:
		}
	}
}

func httpsClient(caFile string) (*http.Client, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("no certificate in " + caFile)
	}
	return &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
	}, nil
}

func get(c *http.Client, url, token string) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return res.StatusCode, body, err
}

// writeKubeconfig writes one cluster, and one user and one context per
// user, named alike.
func writeKubeconfig(path, server, caFile string, users map[string]*clientcmdapi.AuthInfo, current string) error {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["realkube"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	for name, user := range users {
		cfg.AuthInfos[name] = user
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: "realkube", AuthInfo: name, Namespace: "default"}
	}
	cfg.CurrentContext = current
	return clientcmd.WriteToFile(*cfg, path)
}

func tokenUser(token string) *clientcmdapi.AuthInfo {
	return &clientcmdapi.AuthInfo{Token: token}
}

// tokenPluginUser is the `expiring` user: this very binary as its exec
// credential plugin (realkube token), with an absolute DIR, as kubectl may
// run it from anywhere.
func (u *launcher) tokenPluginUser() (*clientcmdapi.AuthInfo, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(u.dir)
	if err != nil {
		return nil, err
	}
	return &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
		Command:         self,
		Args:            []string{"token", "--dir", dir, "--ttl", u.tokenTTL.String()},
		APIVersion:      "client.authentication.k8s.io/v1",
		InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
	}}, nil
}

// startTokenWebhook makes the run's token key, serves the token webhook and
// writes the kubeconfig that names it to kube-apiserver; it returns that
// kubeconfig's path.
func (u *launcher) startTokenWebhook(certs *pki) (string, error) {
	signer, err := newTokenSigner(u.dir)
	if err != nil {
		return "", err
	}
	url, err := serveTokenWebhook(signer, certs.ServingCert, certs.ServingKey)
	if err != nil {
		return "", err
	}
	path := tokenWebhookConfig(u.dir)
	// kube-apiserver is the webhook's client and needs no credentials.
	err = writeKubeconfig(path, url, certs.CACert, map[string]*clientcmdapi.AuthInfo{"apiserver": {}}, "apiserver")
	return path, err
}

// tail is the last n lines of a log file, for error messages.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64*1024), 1<<20)
	for s.Scan() {
		lines = append(lines, s.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return "  " + strings.Join(lines, "\n  ") + "\n"
}
