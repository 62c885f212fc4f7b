// Command realkube is a real Kubernetes control plane for kubectl-krply's
// integration tests, built from Kubernetes' own Go modules (see README.md).
//
// It is one binary with subcommands, the way hyperkube was:
//
//	realkube up --dir DIR            starts etcd, kube-apiserver and kube-controller-manager,
//	                                 each as its own process, and writes DIR/ready.json
//	realkube etcd ...                embedded etcd (one member, on 127.0.0.1)
//	realkube apiserver ...           kube-apiserver, with kube-apiserver's own flags
//	realkube controller-manager ...  kube-controller-manager, with its own flags
//	realkube kubectl ...             kubectl (also when the binary is invoked as "kubectl")
//	realkube compact --etcd URL      compacts etcd to its current revision (a real 410 on demand)
//	realkube restart-apiserver --dir DIR
//	                                 restarts the kube-apiserver of a running `up`, on the same etcd
//	realkube token --dir DIR         the exec credential plugin of the kubeconfig's `expiring` user
//
// Each component runs in its own process so that their process-global state
// (flag sets, feature gates, klog and metrics registries) never mixes.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

const usage = `usage: realkube up|etcd|apiserver|controller-manager|kubectl|compact|restart-apiserver|token [flags]

  up                  run a whole control plane on 127.0.0.1 (realkube up --help)
  etcd                embedded etcd
  apiserver           kube-apiserver
  controller-manager  kube-controller-manager
  kubectl             kubectl (also when invoked through a link named kubectl)
  compact             compact etcd to its current revision
  restart-apiserver   restart the kube-apiserver of a running up, and wait until it is ready
  token               exec credential plugin: a short-lived token for the expiring user
`

func main() {
	// Invoked through a link named "kubectl": behave as kubectl.
	if strings.TrimSuffix(filepath.Base(os.Args[0]), ".exe") == "kubectl" {
		runKubectl(os.Args[1:])
	}
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	sub, args := os.Args[1], os.Args[2:]
	switch sub {
	case "up":
		os.Exit(runUp(args))
	case "etcd":
		os.Exit(runEtcd(args))
	case "compact":
		os.Exit(runCompact(args))
	case "restart-apiserver":
		os.Exit(runRestartAPIServer(args))
	case "token":
		os.Exit(runToken(args))
	case "apiserver":
		os.Args = append([]string{"kube-apiserver"}, args...)
		cmd := apiserver.NewAPIServerCommand()
		cmd.SetArgs(args)
		os.Exit(cli.Run(cmd))
	case "controller-manager":
		os.Args = append([]string{"kube-controller-manager"}, args...)
		cmd := controllermanager.NewControllerManagerCommand()
		cmd.SetArgs(args)
		os.Exit(cli.Run(cmd))
	case "kubectl":
		runKubectl(args)
	case "-h", "--help", "help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "realkube: unknown subcommand %q\n%s", sub, usage)
		os.Exit(2)
	}
}

// runKubectl runs kubectl as cmd/kubectl does, and never returns.
func runKubectl(args []string) {
	os.Args = append([]string{"kubectl"}, args...)
	// As cmd/kubectl does: the verbosity is needed before flags are parsed.
	_, _ = logs.GlogSetter(kubectlcmd.GetLogVerbosity(os.Args))
	command := kubectlcmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		kubectlutil.CheckErr(err)
	}
	os.Exit(0)
}
