#!/usr/bin/env bash
# Cuts a kubectl-krply release for krew: builds the binary for a target, packs it
# with LICENSE and README into the archive the krew manifest points at, writes
# the archive's sha256, and renders the manifest from plugin/krew-manifest.yaml.tmpl.
#
#   plugin/release.sh build [--cross] [TARGET|OS/ARCH ...]   build and pack (default: this machine)
#   plugin/release.sh pack OS/ARCH BINARY                     pack a binary that is already built
#   plugin/release.sh manifest [--allow-missing] [--out FILE] render the manifest from dist/
#   plugin/release.sh platforms                               the platforms and their Rust targets
#
# Options before the command: --dist DIR (default: dist/ at the top of the
# repository, or $KRPLY_DIST), --version vX.Y.Z (default: the crate version).
# See plugin/README.md for the whole procedure.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PLUGIN=krply
BIN=kubectl-krply
TEMPLATE="$ROOT/plugin/krew-manifest.yaml.tmpl"
PLACEHOLDER_SHA=0000000000000000000000000000000000000000000000000000000000000000
DIST="${KRPLY_DIST:-$ROOT/dist}"
VERSION=""

# The platforms of the manifest and the Rust target each is built for. Linux
# builds link musl statically so that one binary runs on every distribution.
PLATFORMS=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64)

# Temporary directories, removed when the script exits however it exits.
TEMP_DIRS=()
cleanup() {
    if [ ${#TEMP_DIRS[@]} -gt 0 ]; then
        rm -rf "${TEMP_DIRS[@]}"
    fi
}
trap cleanup EXIT

die() {
    echo "release.sh: error: $*" >&2
    exit 1
}

note() {
    echo "release.sh: $*" >&2
}

target_of() {
    case "$1" in
        linux/amd64) echo x86_64-unknown-linux-musl ;;
        linux/arm64) echo aarch64-unknown-linux-musl ;;
        darwin/amd64) echo x86_64-apple-darwin ;;
        darwin/arm64) echo aarch64-apple-darwin ;;
        windows/amd64) echo x86_64-pc-windows-msvc ;;
        *) return 1 ;;
    esac
}

# The krew platform of a Rust target (glibc and MinGW builds map too, for
# builds on this machine).
platform_of() {
    case "$1" in
        x86_64-unknown-linux-musl | x86_64-unknown-linux-gnu) echo linux/amd64 ;;
        aarch64-unknown-linux-musl | aarch64-unknown-linux-gnu) echo linux/arm64 ;;
        x86_64-apple-darwin) echo darwin/amd64 ;;
        aarch64-apple-darwin) echo darwin/arm64 ;;
        x86_64-pc-windows-msvc | x86_64-pc-windows-gnu) echo windows/amd64 ;;
        *) return 1 ;;
    esac
}

host_target() {
    rustc -vV | sed -n 's/^host: //p'
}

crate_version() {
    local v
    v="$(sed -n 's/^version = "\([^"]*\)"$/\1/p' "$ROOT/Cargo.toml" | head -n 1)"
    [ -n "$v" ] || die "cannot read the version from $ROOT/Cargo.toml"
    echo "v$v"
}

version() {
    if [ -z "$VERSION" ]; then
        VERSION="$(crate_version)"
    fi
    case "$VERSION" in
        v[0-9]*.[0-9]*.[0-9]*) ;;
        *) die "version $VERSION is not semver with a leading v (like v0.1.0)" ;;
    esac
    echo "$VERSION"
}

check_platform() {
    target_of "$1" >/dev/null || die "unknown platform $1 (want one of: ${PLATFORMS[*]})"
}

ext_of() {
    case "$1" in
        windows/*) echo zip ;;
        *) echo tar.gz ;;
    esac
}

archive_name() {
    local platform="$1"
    echo "$BIN-$(version)-${platform%/*}-${platform#*/}.$(ext_of "$platform")"
}

exe_of() {
    case "$1" in
        windows/*) echo "$BIN.exe" ;;
        *) echo "$BIN" ;;
    esac
}

sha256_of() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum "$1" | cut -d ' ' -f 1
    elif command -v shasum >/dev/null 2>&1; then
        shasum -a 256 "$1" | cut -d ' ' -f 1
    else
        die "neither sha256sum nor shasum is installed"
    fi
}

# Packs BINARY for PLATFORM: the archive holds, at its top level, the binary
# under the name the manifest's `bin` gives, LICENSE (krew refuses plugins whose
# archive lacks one), README.md and, for Linux and macOS, kubectl_complete-krply.
cmd_pack() {
    [ $# -eq 2 ] || die "usage: release.sh pack OS/ARCH BINARY"
    local platform="$1" binary="$2"
    check_platform "$platform"
    [ -f "$binary" ] || die "no binary at $binary"
    mkdir -p "$DIST"
    local dist stage name exe
    dist="$(cd "$DIST" && pwd)"
    name="$(archive_name "$platform")"
    exe="$(exe_of "$platform")"
    stage="$(mktemp -d)"
    TEMP_DIRS+=("$stage")
    cp "$binary" "$stage/$exe"
    chmod 0755 "$stage/$exe"
    cp "$ROOT/LICENSE" "$stage/LICENSE"
    cp "$ROOT/README.md" "$stage/README.md"
    chmod 0644 "$stage/LICENSE" "$stage/README.md"
    local files=("$exe" LICENSE README.md)
    if [ "$(ext_of "$platform")" = tar.gz ]; then
        cp "$ROOT/plugin/kubectl_complete-krply" "$stage/kubectl_complete-$PLUGIN"
        chmod 0755 "$stage/kubectl_complete-$PLUGIN"
        files+=("kubectl_complete-$PLUGIN")
    fi
    rm -f "$dist/$name" "$dist/$name.sha256"
    case "$name" in
        *.tar.gz)
            # Reproducible where GNU tar allows: fixed order, owner and time.
            local tar_flags=()
            if tar --version 2>/dev/null | grep -q 'GNU tar'; then
                tar_flags=(--sort=name --owner=0 --group=0 --numeric-owner
                    "--mtime=@${SOURCE_DATE_EPOCH:-0}")
            fi
            (cd "$stage" && tar ${tar_flags[@]+"${tar_flags[@]}"} -cf - "${files[@]}") | gzip -n >"$dist/$name"
            ;;
        *.zip)
            if command -v zip >/dev/null 2>&1; then
                (cd "$stage" && zip -q -X "$dist/$name" "${files[@]}")
            elif command -v python3 >/dev/null 2>&1; then
                (cd "$stage" && python3 -m zipfile -c "$dist/$name" "${files[@]}")
            else
                die "packing a .zip needs zip (apt-get install zip) or python3"
            fi
            ;;
    esac
    local sum
    sum="$(sha256_of "$dist/$name")"
    echo "$sum  $name" >"$dist/$name.sha256"
    note "packed $dist/$name (sha256 $sum)"
    echo "$dist/$name"
}

# Builds TARGET in release mode, without symbols, and packs it. The host target builds with
# cargo; other targets build with `cross` when asked (--cross), else with cargo
# (which needs `rustup target add TARGET` and a C cross toolchain for the
# bundled SQLite, ring and zstd).
cmd_build() {
    local use_cross=0 args=()
    while [ $# -gt 0 ]; do
        case "$1" in
            --cross) use_cross=1 ;;
            -*) die "unknown build option $1" ;;
            *) args+=("$1") ;;
        esac
        shift
    done
    if [ ${#args[@]} -eq 0 ]; then
        args=("$(host_target)")
    fi
    local host
    host="$(host_target)"
    for arg in "${args[@]}"; do
        local target platform
        if target_of "$arg" >/dev/null; then
            platform="$arg"
            target="$(target_of "$arg")"
        else
            target="$arg"
            platform="$(platform_of "$target")" || die "no krew platform for target $target"
        fi
        local builder=(cargo)
        if [ "$use_cross" = 1 ] && [ "$target" != "$host" ]; then
            command -v cross >/dev/null 2>&1 ||
                die "--cross needs cross (cargo install cross --locked) and docker or podman"
            builder=(cross)
        fi
        note "building $target for $platform with ${builder[*]}"
        # Shipped binaries carry no symbols or line tables: about 15 MB instead
        # of 100 MB for Linux x86_64 (the release profile keeps line tables for
        # local profiling).
        (cd "$ROOT" && "${builder[@]}" build --release --locked --target "$target" \
            --config 'profile.release.strip="symbols"')
        local target_dir="${CARGO_TARGET_DIR:-$ROOT/target}"
        case "$target_dir" in /*) ;; *) target_dir="$ROOT/$target_dir" ;; esac
        local exe="$BIN"
        case "$platform" in windows/*) exe="$BIN.exe" ;; esac
        cmd_pack "$platform" "$target_dir/$target/release/$exe" >/dev/null
    done
}

# Renders the manifest: {{VERSION}} and, per platform, {{SHA256_OS_ARCH}} from
# the archive's .sha256 in the dist directory. A platform without an archive is
# an error, or with --allow-missing a placeholder of zeros and a header line
# saying that the version is not released yet.
cmd_manifest() {
    local allow_missing=0 out=""
    while [ $# -gt 0 ]; do
        case "$1" in
            --allow-missing) allow_missing=1 ;;
            --out)
                [ $# -ge 2 ] || die "--out needs a file"
                out="$2"
                shift
                ;;
            *) die "unknown manifest option $1" ;;
        esac
        shift
    done
    [ -n "$out" ] || out="$DIST/$PLUGIN.yaml"
    [ -f "$TEMPLATE" ] || die "no template at $TEMPLATE"
    local v missing=() sed_args=()
    v="$(version)"
    sed_args+=(-e "s|{{VERSION}}|$v|g")
    for platform in "${PLATFORMS[@]}"; do
        local key name sum
        key="SHA256_$(echo "${platform%/*}_${platform#*/}" | tr '[:lower:]' '[:upper:]')"
        name="$(archive_name "$platform")"
        if [ -f "$DIST/$name.sha256" ]; then
            sum="$(cut -d ' ' -f 1 "$DIST/$name.sha256")"
            case "$sum" in
                *[!0-9a-f]* | "") die "$DIST/$name.sha256 does not hold a sha256" ;;
            esac
            [ ${#sum} -eq 64 ] || die "$DIST/$name.sha256 does not hold a sha256"
        elif [ "$allow_missing" = 1 ]; then
            sum="$PLACEHOLDER_SHA"
            missing+=("$platform")
        else
            die "no archive for $platform ($DIST/$name.sha256); build it, or pass --allow-missing"
        fi
        sed_args+=(-e "s|{{$key}}|$sum|g")
    done
    mkdir -p "$(dirname "$out")"
    {
        if [ ${#missing[@]} -gt 0 ]; then
            echo "# NOT RELEASED: placeholder sha256 (all zeros) for ${missing[*]};"
            echo "# plugin/release.sh manifest fills them in from the release archives."
        fi
        sed "${sed_args[@]}" "$TEMPLATE"
    } >"$out.tmp"
    if grep -n '{{' "$out.tmp" >&2; then
        rm -f "$out.tmp"
        die "the template has placeholders this script does not know (above)"
    fi
    mv "$out.tmp" "$out"
    if [ ${#missing[@]} -gt 0 ]; then
        note "placeholders for ${missing[*]}: not a releasable manifest"
    fi
    note "rendered $out for $v"
    echo "$out"
}

cmd_platforms() {
    for platform in "${PLATFORMS[@]}"; do
        printf '%-14s %-28s %s\n' "$platform" "$(target_of "$platform")" "$(archive_name "$platform")"
    done
}

main() {
    while [ $# -gt 0 ]; do
        case "$1" in
            --dist)
                [ $# -ge 2 ] || die "--dist needs a directory"
                DIST="$2"
                shift 2
                ;;
            --version)
                [ $# -ge 2 ] || die "--version needs a version like v0.1.0"
                VERSION="$2"
                shift 2
                ;;
            -h | --help)
                sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
                exit 0
                ;;
            *) break ;;
        esac
    done
    [ $# -ge 1 ] || die "no command; see release.sh --help"
    local command="$1"
    shift
    case "$command" in
        build) cmd_build "$@" ;;
        pack) cmd_pack "$@" ;;
        manifest) cmd_manifest "$@" ;;
        platforms) cmd_platforms "$@" ;;
        *) die "unknown command $command; see release.sh --help" ;;
    esac
}

main "$@"
