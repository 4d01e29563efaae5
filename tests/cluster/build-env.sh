# Sourced by build.sh and node/build.sh: where the binaries go, how they are built, and
# the stamps that say a binary is up to date. Needs versions.env sourced and log() set.
cache_root=${CITERUN_K8S_CACHE:-$HOME/.cache/citerun/k8s}
root=$cache_root/$KUBERNETES_VERSION
bin=$root/bin
jobs=${CITERUN_BUILD_JOBS:-$(nproc)}
mkdir -p "$bin"

# Static, reproducible-ish binaries; no VCS stamping (the sources are module zips).
export CGO_ENABLED=0
export GOFLAGS="-trimpath -buildvcs=false"

k8s_minor=${KUBERNETES_VERSION#v1.}
k8s_minor=${k8s_minor%%.*}
staging_version=v0.${KUBERNETES_VERSION#v1.}

# stamp_ok NAME CONTENT: the binary exists and was built from exactly CONTENT.
stamp_ok() {
    [[ -x $bin/$1 && -f $bin/.$1.stamp && $(<"$bin/.$1.stamp") == "$2" ]]
}
write_stamp() { printf '%s' "$2" >"$bin/.$1.stamp"; }

# k8s.io/kubernetes binaries (the apiserver and kubectl; the kubelet & co.) carry their
# version in these variables, and one stamp records it for all of them.
ver_ldflags=""
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ver_ldflags+=" -X $p.gitVersion=$KUBERNETES_VERSION -X $p.gitMajor=1"
    ver_ldflags+=" -X $p.gitMinor=$k8s_minor -X $p.gitTreeState=clean"
done
k8s_stamp="kubernetes=$KUBERNETES_VERSION staging=$staging_version ldflags=-s -w$ver_ldflags"
