#!/usr/bin/env bash
# Builds the test control plane's binaries from the Go module proxy, once:
#   kube-apiserver, kubectl  <- k8s.io/kubernetes
#   etcd                     <- go.etcd.io/etcd/server/v3
#   helm                     <- helm.sh/helm/v3/cmd/helm
# into ${CITERUN_K8S_CACHE:-$HOME/.cache/citerun/k8s}/<kubernetes version>/bin/.
#
# Versions come from versions.env beside this script. Each binary has a stamp file
# recording the version and flags it was built with; a binary whose stamp matches is
# not rebuilt, so a second run takes well under a second. Nothing is written into the
# repository: the throw-away Go modules live under the cache dir, and Go's own module
# and build caches are the usual ones (GOMODCACHE, GOCACHE).
#
# Environment:
#   CITERUN_K8S_CACHE    cache root (default $HOME/.cache/citerun/k8s)
#   CITERUN_BUILD_JOBS   parallel compile jobs, go build -p (default: nproc)
# Prints the bin directory on stdout as its last line; progress goes to stderr.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"

log() { printf '[build.sh %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
# shellcheck source=build-env.sh
source "$here/build-env.sh"
need_go() {
    command -v go >/dev/null || {
        log "error: 'go' is not on PATH; Go >= 1.26 is needed to build $1"
        exit 1
    }
}

# One build at a time per cache dir (parallel pytest sessions may both call us).
exec 9>"$root/.lock"
flock 9

# --- kube-apiserver + kubectl -------------------------------------------------------
k8s_pkg=k8s.io/kubernetes
if stamp_ok kube-apiserver "$k8s_stamp" && stamp_ok kubectl "$k8s_stamp"; then
    log "kube-apiserver, kubectl $KUBERNETES_VERSION: up to date"
else
    need_go kube-apiserver
    log "kube-apiserver, kubectl $KUBERNETES_VERSION: building (~6 min on 2 cores from empty Go caches)"
    mod=$root/src/kubernetes
    rm -rf "$mod" && mkdir -p "$mod"
    (
        cd "$mod"
        go mod init citerun.local/k8s-build >/dev/null 2>&1
        go mod edit -require="$k8s_pkg@$KUBERNETES_VERSION"
        # k8s.io/kubernetes points every staging module at ./staging/src/k8s.io/X, which
        # is not in its module zip; replace each with its published v0.MINOR.PATCH twin.
        gomod=$(go mod download -json "$k8s_pkg@$KUBERNETES_VERSION" |
            sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
        staging=$(sed -n 's#^[[:space:]]*\(k8s\.io/[^[:space:]]*\) => \./staging/.*#\1#p' "$gomod")
        [[ -n $staging ]] || { echo "no staging replaces found in $gomod" >&2; exit 1; }
        for m in $staging; do
            go mod edit -replace="$m=$m@$staging_version"
        done
        log "replaced $(wc -w <<<"$staging") staging modules with $staging_version"
        go get "$k8s_pkg/cmd/kube-apiserver@$KUBERNETES_VERSION" \
            "$k8s_pkg/cmd/kubectl@$KUBERNETES_VERSION" >&2
        out=$(mktemp -d "$root/out.XXXXXX")
        # One invocation, so the two commands share every compiled package.
        go build -p "$jobs" -ldflags="-s -w$ver_ldflags" -o "$out/" \
            "$k8s_pkg/cmd/kube-apiserver" "$k8s_pkg/cmd/kubectl" >&2
        mv -f "$out/kube-apiserver" "$out/kubectl" "$bin/"
        rmdir "$out"
    )
    write_stamp kube-apiserver "$k8s_stamp"
    write_stamp kubectl "$k8s_stamp"
    log "kube-apiserver, kubectl $KUBERNETES_VERSION: built"
fi

# --- etcd ----------------------------------------------------------------------------
# go install pkg@version refuses etcd's server module (its go.mod has replace
# directives), so build it from a throw-away module that requires it.
etcd_stamp="etcd=$ETCD_VERSION ldflags=-s -w"
if stamp_ok etcd "$etcd_stamp"; then
    log "etcd $ETCD_VERSION: up to date"
else
    need_go etcd
    log "etcd $ETCD_VERSION: building"
    mod=$root/src/etcd
    rm -rf "$mod" && mkdir -p "$mod"
    (
        cd "$mod"
        go mod init citerun.local/etcd-build >/dev/null 2>&1
        go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >&2
        go build -p "$jobs" -ldflags="-s -w" -o "$root/etcd.tmp" go.etcd.io/etcd/server/v3 >&2
        mv -f "$root/etcd.tmp" "$bin/etcd"
    )
    write_stamp etcd "$etcd_stamp"
    log "etcd $ETCD_VERSION: built"
fi

# --- helm ----------------------------------------------------------------------------
helm_pkg=helm.sh/helm/v3
helm_ldflags="-s -w -X $helm_pkg/internal/version.version=$HELM_VERSION"
# helm's default .Capabilities.KubeVersion (helm template, lint) is a link-time value.
for p in pkg/chartutil pkg/lint/rules; do
    helm_ldflags+=" -X $helm_pkg/$p.k8sVersionMajor=1 -X $helm_pkg/$p.k8sVersionMinor=$k8s_minor"
done
helm_stamp="helm=$HELM_VERSION ldflags=$helm_ldflags"
if stamp_ok helm "$helm_stamp"; then
    log "helm $HELM_VERSION: up to date"
else
    need_go helm
    log "helm $HELM_VERSION: building"
    out=$(mktemp -d "$root/out.XXXXXX")
    GOBIN=$out go install -p "$jobs" -ldflags="$helm_ldflags" "$helm_pkg/cmd/helm@$HELM_VERSION" >&2
    mv -f "$out/helm" "$bin/helm"
    rmdir "$out"
    write_stamp helm "$helm_stamp"
    log "helm $HELM_VERSION: built"
fi

echo "$bin"
