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
