package main

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The `expiring` user authenticates with short-lived tokens from an exec
// credential plugin (`realkube token`), as on a cluster behind SSO: `up`
// checks them in a token webhook of its own (kube-apiserver's
// --authentication-token-webhook-config-file), since a static token file has
// no expiry. A token is
//
//	krply-expiring.<expiry, unix seconds>.<nonce>.<HMAC-SHA256 of the rest, hex>
//
// signed with a key generated per run; the webhook accepts it, as user
// krply-expiring in system:masters, until its expiry.
const expiringUser = "krply-expiring"

// The exec plugin fails with this message when the fail file is empty.
const defaultTokenFailure = "error: SSO session expired"

// The files under DIR that the token plugin and the tests share.
func tokenKeyFile(dir string) string     { return filepath.Join(dir, "pki", "token-hmac.key") }
func tokenFailFile(dir string) string    { return filepath.Join(dir, "token-fail") }
func tokensMintedFile(dir string) string { return filepath.Join(dir, "tokens-minted") }
func tokenWebhookConfig(dir string) string {
	return filepath.Join(dir, "pki", "token-webhook.kubeconfig")
}

type tokenSigner struct{ key []byte }

// newTokenSigner makes the run's signing key and keeps it in DIR, where
// `realkube token` finds it.
func newTokenSigner(dir string) (*tokenSigner, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	if err := os.WriteFile(tokenKeyFile(dir), []byte(hex.EncodeToString(key)+"\n"), 0o600); err != nil {
		return nil, err
	}
	return &tokenSigner{key: key}, nil
}

func loadTokenSigner(dir string) (*tokenSigner, error) {
	text, err := os.ReadFile(tokenKeyFile(dir))
	if err != nil {
		return nil, fmt.Errorf("no token key (is DIR a `realkube up` directory?): %w", err)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(text)))
	if err != nil || len(key) == 0 {
		return nil, fmt.Errorf("%s: not a hex key", tokenKeyFile(dir))
	}
	return &tokenSigner{key: key}, nil
}

func (s *tokenSigner) mac(body string) string {
	h := hmac.New(sha256.New, s.key)
	h.Write([]byte(body))
	return hex.EncodeToString(h.Sum(nil))
}

// mint is a token valid until expiry (whole seconds). The nonce makes every
// token different, even two minted in the same second.
func (s *tokenSigner) mint(expiry time.Time) (string, error) {
	nonce := make([]byte, 8)
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	body := fmt.Sprintf("%s.%d.%s", expiringUser, expiry.Unix(), hex.EncodeToString(nonce))
	return body + "." + s.mac(body), nil
}

// valid says whether token is one of ours and unexpired at now.
func (s *tokenSigner) valid(token string, now time.Time) bool {
	i := strings.LastIndexByte(token, '.')
	if i < 0 {
		return false
	}
	body, mac := token[:i], token[i+1:]
	if !hmac.Equal([]byte(mac), []byte(s.mac(body))) {
		return false
	}
	parts := strings.Split(body, ".")
	if len(parts) != 3 || parts[0] != expiringUser {
		return false
	}
	expiry, err := strconv.ParseInt(parts[1], 10, 64)
	return err == nil && now.Before(time.Unix(expiry, 0))
}

// tokenReview is the part of an authentication.k8s.io/v1 TokenReview the
// webhook reads and writes (kube-apiserver sends v1 as told by
// --authentication-token-webhook-version).
type tokenReview struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		Token string `json:"token"`
	} `json:"spec"`
	Status tokenReviewStatus `json:"status"`
}

type tokenReviewStatus struct {
	Authenticated bool        `json:"authenticated"`
	User          *reviewUser `json:"user,omitempty"`
}

type reviewUser struct {
	Username string   `json:"username"`
	UID      string   `json:"uid"`
	Groups   []string `json:"groups"`
}

// review answers one TokenReview. Any token that is not ours, or expired, is
// simply not authenticated, with no error: kube-apiserver has already tried
// its static tokens and service-account tokens, and logs webhook errors.
func (s *tokenSigner) review(w http.ResponseWriter, r *http.Request) {
	var tr tokenReview
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&tr); err != nil {
		http.Error(w, "not a TokenReview: "+err.Error(), http.StatusBadRequest)
		return
	}
	tr.APIVersion, tr.Kind = "authentication.k8s.io/v1", "TokenReview"
	tr.Status = tokenReviewStatus{}
	if s.valid(tr.Spec.Token, time.Now()) {
		tr.Status = tokenReviewStatus{Authenticated: true, User: &reviewUser{
			Username: expiringUser,
			UID:      "uid-" + expiringUser,
			Groups:   []string{"system:masters"},
		}}
	}
	tr.Spec.Token = ""
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&tr)
}

// serveTokenWebhook serves the webhook on 127.0.0.1 with TLS (the serving
// certificate is kube-apiserver's own, which is for 127.0.0.1 and signed by
// the run's CA) for as long as `up` runs, restarts of kube-apiserver
// included. It returns the webhook's URL.
func serveTokenWebhook(s *tokenSigner, certFile, keyFile string) (string, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return "", err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{
		Handler:           http.HandlerFunc(s.review),
		ReadHeaderTimeout: 10 * time.Second,
	}
	tl := tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	go func() {
		if err := srv.Serve(tl); err != nil {
			fmt.Fprintf(os.Stderr, "realkube up: token webhook: %v\n", err)
		}
	}()
	return "https://" + l.Addr().String() + "/tokenreview", nil
}

// execCredential is a client.authentication.k8s.io/v1 ExecCredential, what
// an exec credential plugin prints.
type execCredential struct {
	APIVersion string               `json:"apiVersion"`
	Kind       string               `json:"kind"`
	Spec       struct{}             `json:"spec"`
	Status     execCredentialStatus `json:"status"`
}

type execCredentialStatus struct {
	ExpirationTimestamp string `json:"expirationTimestamp"`
	Token               string `json:"token"`
}

// runToken is the `expiring` user's exec credential plugin: it prints an
// ExecCredential with a fresh token valid for --ttl, and counts it in
// DIR/tokens-minted; or, while DIR/token-fail exists, fails as an SSO helper
// whose session is gone would. KUBERNETES_EXEC_INFO (the cluster, whether
// stdin is a terminal) changes nothing here.
func runToken(args []string) int {
	fs := flag.NewFlagSet("token", flag.ExitOnError)
	dir := fs.String("dir", "", "the directory of a `realkube up` (required)")
	ttl := fs.Duration("ttl", 10*time.Minute, "how long the token is valid (at least 1s)")
	_ = fs.Parse(args)
	if *dir == "" || *ttl < time.Second {
		fmt.Fprintln(os.Stderr, "realkube token: --dir is required, and --ttl must be at least 1s")
		return 2
	}
	if msg, failing, err := tokenFailure(*dir); err != nil || failing {
		if err != nil {
			msg = "realkube token: " + err.Error()
		}
		fmt.Fprintln(os.Stderr, msg)
		return 1
	}
	cred, err := mintCredential(*dir, *ttl)
	if err != nil {
		fmt.Fprintf(os.Stderr, "realkube token: %v\n", err)
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(cred); err != nil {
		fmt.Fprintf(os.Stderr, "realkube token: %v\n", err)
		return 1
	}
	return 0
}

// tokenFailure reads DIR/token-fail: while it exists the plugin fails with
// its text (or defaultTokenFailure when it is empty).
func tokenFailure(dir string) (string, bool, error) {
	text, err := os.ReadFile(tokenFailFile(dir))
	if errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	msg := strings.TrimRight(string(text), "\r\n")
	if strings.TrimSpace(msg) == "" {
		msg = defaultTokenFailure
	}
	return msg, true, nil
}

// mintCredential mints a token and counts it: one line per token in
// DIR/tokens-minted, "<minted> <expires>" (RFC 3339, UTC).
func mintCredential(dir string, ttl time.Duration) (*execCredential, error) {
	signer, err := loadTokenSigner(dir)
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	// Whole seconds: the token and the expirationTimestamp say the same instant.
	expiry := now.Add(ttl).Truncate(time.Second)
	token, err := signer.mint(expiry)
	if err != nil {
		return nil, err
	}
	line := now.Format(time.RFC3339) + " " + expiry.Format(time.RFC3339) + "\n"
	if err := appendLine(tokensMintedFile(dir), line); err != nil {
		return nil, err
	}
	cred := &execCredential{
		APIVersion: "client.authentication.k8s.io/v1",
		Kind:       "ExecCredential",
		Status:     execCredentialStatus{ExpirationTimestamp: expiry.Format(time.RFC3339), Token: token},
	}
	return cred, nil
}

// appendLine appends with one write to an O_APPEND file, so that plugins
// running at the same time never interleave their lines.
func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(line); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
