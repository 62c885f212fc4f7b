package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// restartSignal asks `up` to restart kube-apiserver. Not SIGHUP: a closed
// terminal sends that one, and it should not look like a request.
const restartSignal = syscall.SIGUSR1

// How long `up` gives the old kube-apiserver to finish after SIGTERM (it
// drains its requests first), and the new one to answer /readyz.
const (
	apiserverStopGrace  = 15 * time.Second
	apiserverRestartMax = 2 * time.Minute
)

// The files under DIR that `up` and `restart-apiserver` share.
func restartsFile(dir string) string { return filepath.Join(dir, "restarts") }
func downForFile(dir string) string  { return filepath.Join(dir, "restart-down-for") }

// restartAPIServer replaces kube-apiserver with a new process with exactly the
// same flags, so the same port, certificates, tokens and etcd; waits until it
// answers /readyz; and only then counts the restart in DIR/restarts, which is
// what `restart-apiserver` waits for. It must run on the thread that started
// the children (see runUp): the new one gets Pdeathsig from it.
func (u *launcher) restartAPIServer(ctx context.Context) error {
	began := time.Now()
	old := u.find("apiserver")
	if old == nil {
		return errors.New("no kube-apiserver to restart")
	}
	downFor := u.takeDownFor()
	n := u.restarts + 1
	_ = appendLine(old.log, fmt.Sprintf("--- realkube up: restart %d of kube-apiserver (down for %s) ---\n", n, downFor))
	if !old.stop(apiserverStopGrace) {
		return fmt.Errorf("the old kube-apiserver (pid %d) did not exit, even after SIGKILL", old.cmd.Process.Pid)
	}
	stopped := time.Since(began)
	if downFor > 0 {
		select {
		case <-time.After(downFor):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	c, err := u.spawn(old.name, old.args...)
	if err != nil {
		return err
	}
	u.replace(old, c)
	wait, cancel := context.WithTimeout(ctx, apiserverRestartMax)
	defer cancel()
	if err := waitFor(wait, c, "the new kube-apiserver's /readyz", u.apiserverReady); err != nil {
		return err
	}
	if err := writeFileAtomic(restartsFile(u.dir), strconv.Itoa(n)+"\n"); err != nil {
		return err
	}
	u.restarts = n
	fmt.Fprintf(os.Stderr, "realkube up: kube-apiserver restarted (%d): stopped in %s, ready %s later\n",
		n, stopped.Round(100*time.Millisecond), (time.Since(began) - stopped - downFor).Round(100*time.Millisecond))
	return nil
}

// takeDownFor reads and removes the request's --down-for, if any: a signal
// carries no arguments.
func (u *launcher) takeDownFor() time.Duration {
	text, err := os.ReadFile(downForFile(u.dir))
	if err != nil {
		return 0
	}
	_ = os.Remove(downForFile(u.dir))
	d, err := time.ParseDuration(strings.TrimSpace(string(text)))
	if err != nil || d < 0 {
		fmt.Fprintf(os.Stderr, "realkube up: ignoring %s: %q is not a duration\n", downForFile(u.dir), text)
		return 0
	}
	return d
}

// writeFileAtomic writes through a temporary file and a rename, so that a
// reader sees the old content or the new, never a part.
func writeFileAtomic(path, content string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// readCount reads DIR/restarts.
func readCount(path string) (int, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(text)))
}

// runRestartAPIServer asks the `up` of DIR to restart kube-apiserver and
// waits until it has, and the new one is ready.
func runRestartAPIServer(args []string) int {
	fs := flag.NewFlagSet("restart-apiserver", flag.ExitOnError)
	dir := fs.String("dir", "", "the directory of a running `realkube up` (required)")
	timeout := fs.Duration("timeout", 60*time.Second, "give up when the new kube-apiserver is not ready by then (counted after --down-for)")
	downFor := fs.Duration("down-for", 0, "keep kube-apiserver stopped this long before starting the new one")
	_ = fs.Parse(args)
	if *dir == "" || *downFor < 0 || *timeout <= 0 {
		fmt.Fprintln(os.Stderr, "realkube restart-apiserver: --dir is required; --down-for and --timeout must not be negative")
		return 2
	}
	began := time.Now()
	n, err := requestRestart(*dir, *downFor, *timeout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "realkube restart-apiserver: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "realkube restart-apiserver: restart %d done, kube-apiserver ready after %s\n",
		n, time.Since(began).Round(100*time.Millisecond))
	return 0
}

// requestRestart signals `up` and polls DIR/restarts and /readyz until the
// count has grown and the server answers, `up` is gone, or the time is up.
// It returns the new count.
func requestRestart(dir string, downFor, timeout time.Duration) (int, error) {
	ready, err := readReady(dir)
	if err != nil {
		return 0, err
	}
	if ready.RestartsFile == "" {
		return 0, fmt.Errorf("this `realkube up` (pid %d) cannot restart kube-apiserver: it predates restart-apiserver", ready.Pid)
	}
	before, err := readCount(ready.RestartsFile)
	if err != nil {
		return 0, err
	}
	if err := syscall.Kill(ready.Pid, 0); err != nil {
		return 0, fmt.Errorf("no `realkube up` runs for %s (pid %d): %v", dir, ready.Pid, err)
	}
	if downFor > 0 {
		if err := writeFileAtomic(downForFile(dir), downFor.String()+"\n"); err != nil {
			return 0, err
		}
	}
	if err := syscall.Kill(ready.Pid, restartSignal); err != nil {
		return 0, fmt.Errorf("signalling `realkube up` (pid %d): %v", ready.Pid, err)
	}
	client, err := httpsClient(ready.CAFile)
	if err != nil {
		return 0, err
	}
	client.Timeout = 2 * time.Second
	admin := ready.Users["admin"].Token
	deadline := time.Now().Add(downFor + timeout)
	for {
		n, err := readCount(ready.RestartsFile)
		if err == nil && n > before {
			code, _, err := get(client, ready.Server+"/readyz", admin)
			if err == nil && code == http.StatusOK {
				return n, nil
			}
		}
		if err := syscall.Kill(ready.Pid, 0); err != nil {
			return 0, fmt.Errorf("`realkube up` (pid %d) is gone; see its stderr and %s", ready.Pid, ready.Logs["apiserver"])
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("kube-apiserver not restarted and ready within %s (restarts: still %d; log: %s)\n%s",
				downFor+timeout, before, ready.Logs["apiserver"], tail(ready.Logs["apiserver"], 20))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func readReady(dir string) (*Ready, error) {
	data, err := os.ReadFile(filepath.Join(dir, "ready.json"))
	if err != nil {
		return nil, fmt.Errorf("no ready.json (is `realkube up --dir %s` running and ready?): %w", dir, err)
	}
	var r Ready
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("ready.json: %w", err)
	}
	return &r, nil
}
