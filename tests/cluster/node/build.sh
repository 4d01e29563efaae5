#!/usr/bin/env bash
# Builds the real node's binaries from the Go module proxy, once, next to the control
# plane's (../build.sh) in ${CITERUN_K8S_CACHE:-$HOME/.cache/citerun/k8s}/<k8s version>/bin:
#   kubelet, kube-controller-manager, kube-scheduler, kube-proxy  <- k8s.io/kubernetes
#   containerd, ctr, containerd-shim-runc-v2                      <- containerd/v2
#   coredns (errors, log, bind, cache, kubernetes plugins only)    <- coredns
#   pause (the pod sandbox's process)  <- build/pause/linux/pause.c of the kubernetes zip
# runc and the CNI plugins are Debian's (runc, containernetworking-plugins).
# Same scheme as ../build.sh: a stamp per binary, throw-away modules under the cache,
# the usual Go caches (so the packages kube-apiserver already compiled are reused).
# Prints the bin directory as its last line.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../versions.env
source "$here/../versions.env"
# shellcheck source=versions.env
source "$here/versions.env"

log() { printf '[node/build.sh %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
# shellcheck source=../build-env.sh
source "$here/../build-env.sh"
# One node build at a time per cache dir (parallel pytest sessions may both call us).
# scripts/test and the node fixture run ../build.sh first, so the packages kube-apiserver
# shares with the kubelet & co. are in the Go build cache by then.
exec 9>"$root/.node-lock"
flock 9

command -v go >/dev/null || { log "error: 'go' is not on PATH (Go >= 1.26 builds the node)"; exit 1; }

# --- containerd ----------------------------------------------------------------------
ctd_pkg=github.com/containerd/containerd/v2
ctd_ldflags="-s -w -X $ctd_pkg/version.Version=$CONTAINERD_VERSION"
ctd_stamp="containerd=$CONTAINERD_VERSION ldflags=$ctd_ldflags"
if stamp_ok containerd "$ctd_stamp" && stamp_ok ctr "$ctd_stamp" &&
    stamp_ok containerd-shim-runc-v2 "$ctd_stamp"; then
    log "containerd $CONTAINERD_VERSION: up to date"
else
    log "containerd $CONTAINERD_VERSION: building (~1-2 min)"
    out=$(mktemp -d "$root/out.XXXXXX")
    GOBIN=$out go install -p "$jobs" -ldflags="$ctd_ldflags" \
        "$ctd_pkg/cmd/containerd@$CONTAINERD_VERSION" "$ctd_pkg/cmd/ctr@$CONTAINERD_VERSION" \
        "$ctd_pkg/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION" >&2
    mv -f "$out"/* "$bin/"
    rmdir "$out"
    for c in containerd ctr containerd-shim-runc-v2; do write_stamp "$c" "$ctd_stamp"; done
    log "containerd: built"
fi

# --- coredns -------------------------------------------------------------------------
# A main package of our own that links only the plugins the test cluster's Corefile uses
# (CoreDNS's documented way to build with a chosen plugin set), so not every cloud SDK.
dns_plugins="errors log bind cache kubernetes"
dns_stamp="coredns=$COREDNS_VERSION plugins=$dns_plugins"
if stamp_ok coredns "$dns_stamp"; then
    log "coredns $COREDNS_VERSION: up to date"
else
    log "coredns $COREDNS_VERSION: building (~2-4 min)"
    mod=$root/src/coredns
    rm -rf "$mod" && mkdir -p "$mod"
    (
        cd "$mod"
        go mod init citerun.local/coredns-build >/dev/null 2>&1
        {
            echo 'package main'
            echo 'import ('
            echo '	"github.com/coredns/coredns/core/dnsserver"'
            echo '	"github.com/coredns/coredns/coremain"'
            for p in $dns_plugins; do echo "	_ \"github.com/coredns/coredns/plugin/$p\""; done
            echo ')'
            printf 'func init() { dnsserver.Directives = []string{'
            for p in $dns_plugins; do printf '"%s", ' "$p"; done
            echo '} }'
            echo 'func main() { coremain.Run() }'
        } >main.go
        go get "github.com/coredns/coredns@$COREDNS_VERSION" >&2
        go mod tidy >&2
        go build -p "$jobs" -ldflags="-s -w" -o "$root/coredns.tmp" . >&2
        mv -f "$root/coredns.tmp" "$bin/coredns"
    )
    write_stamp coredns "$dns_stamp"
    log "coredns: built"
fi

# --- pause ---------------------------------------------------------------------------
pause_src=$(go env GOMODCACHE)/k8s.io/kubernetes@$KUBERNETES_VERSION/build/pause/linux/pause.c
[[ -f $pause_src ]] || go mod download "$k8s_pkg@$KUBERNETES_VERSION"
pause_stamp="pause=$KUBERNETES_VERSION $(sha256sum <"$pause_src" | cut -c1-16)"
if stamp_ok pause "$pause_stamp"; then
    log "pause: up to date"
else
    command -v gcc >/dev/null || { log "error: gcc is needed for the pause binary"; exit 1; }
    gcc -Os -Wall -Werror -static -DVERSION="\"$KUBERNETES_VERSION-citerun\"" \
        -o "$bin/pause.tmp" "$pause_src"
    strip "$bin/pause.tmp" && mv -f "$bin/pause.tmp" "$bin/pause"
    write_stamp pause "$pause_stamp"
    log "pause: built"
fi


# --- kubelet, kube-controller-manager, kube-scheduler, kube-proxy ---------------------
k8s_pkg=k8s.io/kubernetes
node_cmds=(kubelet kube-controller-manager kube-scheduler kube-proxy)
all_ok=1
for c in "${node_cmds[@]}"; do stamp_ok "$c" "$k8s_stamp" || all_ok=0; done
if ((all_ok)); then
    log "${node_cmds[*]} $KUBERNETES_VERSION: up to date"
else
    log "${node_cmds[*]} $KUBERNETES_VERSION: building (~4 min after ../build.sh, ~12 cold)"
    mod=$root/src/node
    rm -rf "$mod" && mkdir -p "$mod"
    (
        cd "$mod"
        go mod init citerun.local/k8s-node-build >/dev/null 2>&1
        go mod edit -require="$k8s_pkg@$KUBERNETES_VERSION"
        gomod=$(go mod download -json "$k8s_pkg@$KUBERNETES_VERSION" |
            sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
        staging=$(sed -n 's#^[[:space:]]*\(k8s\.io/[^[:space:]]*\) => \./staging/.*#\1#p' "$gomod")
        [[ -n $staging ]] || { echo "no staging replaces found in $gomod" >&2; exit 1; }
        for m in $staging; do go mod edit -replace="$m=$m@$staging_version"; done
        pkgs=()
        for c in "${node_cmds[@]}"; do pkgs+=("$k8s_pkg/cmd/$c"); done
        go get "${pkgs[@]/%/@$KUBERNETES_VERSION}" >&2
        out=$(mktemp -d "$root/out.XXXXXX")
        go build -p "$jobs" -ldflags="-s -w$ver_ldflags" -o "$out/" "${pkgs[@]}" >&2
        for c in "${node_cmds[@]}"; do mv -f "$out/$c" "$bin/"; done
        rmdir "$out"
    )
    for c in "${node_cmds[@]}"; do write_stamp "$c" "$k8s_stamp"; done
    log "${node_cmds[*]}: built"
fi


echo "$bin"
