#!/usr/bin/env bash
# Pins the control plane to one Kubernetes release, e.g. ./bump-kubernetes.sh v1.37.2
#
# k8s.io/kubernetes requires its staging modules (k8s.io/api, k8s.io/apiserver,
# k8s.io/client-go, ...) at v0.0.0 and replaces them with ./staging/src/...
# directories that a module consumer never gets, and a dependency's replace
# lines do not apply to us. So this go.mod must replace each of them with the
# published v0.X.Y that goes with v1.X.Y. The list changes between releases:
# it is read from that release's own go.mod, never copied by hand.
set -euo pipefail
cd "$(dirname "$0")"
version=${1:?usage: $0 v1.X.Y}
[[ $version =~ ^v1\.([0-9]+\.[0-9]+)$ ]] || { echo "not a Kubernetes release: $version" >&2; exit 2; }
staging="v0.${BASH_REMATCH[1]}"

gomod=$(go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
[ -f "$gomod" ] || { echo "could not download k8s.io/kubernetes@$version" >&2; exit 1; }

# Drop the replace lines of the previous release, then add this one's.
for old in $(go mod edit -json | sed -n 's/^[[:space:]]*"Path": "\(k8s\.io\/[^"]*\)",$/\1/p' | sort -u); do
	go mod edit -dropreplace="$old" 2>/dev/null || true
done
modules=$(sed -n 's#^[[:space:]]*\(k8s\.io/[^[:space:]]*\) => \./staging/src/.*#\1#p' "$gomod")
[ -n "$modules" ] || { echo "no staging modules found in $gomod" >&2; exit 1; }
for m in $modules; do
	go mod edit -replace="$m=$m@$staging"
done
go mod edit -require="k8s.io/kubernetes@$version"
go mod tidy
echo "k8s.io/kubernetes $version with $(wc -w <<<"$modules") staging modules at $staging"
