#!/usr/bin/env bash
# Builds the prebuilt addons shipped in the npm package, under prebuilds/<platform>-<arch>/:
#   rvma-verbs.node  with rdma-core (needs libibverbs1 and librdmacm1 where it runs)
#   rvma.node        without it (loopback, shm, tcp), for machines without rdma-core
# and build.json: what they were built from and with. Release builds, stripped, with source
# paths mapped to "." so that the same sources, compiler and libraries give the same bytes
# wherever the checkout lives (the script builds twice in different directories and checks).
# Run it on Debian 12 (g++ 12, rdma-core 44); build.json names the oldest glibc the addons load on.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
platform="$(node -p 'process.platform + "-" + process.arch')"
out="prebuilds/$platform"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

pkg-config --exists libibverbs librdmacm || { echo "prebuild: rdma-core headers are needed (apt-get install -y libibverbs-dev librdmacm-dev)" >&2; exit 1; }

# The sources the addons are built from: native/ and CMakeLists.txt as committed. `npm pack` runs
# this (prepack); addons already built from these very sources are kept.
sources="$(git rev-parse HEAD:native):$(git rev-parse HEAD:CMakeLists.txt)"
if [ -z "$(git status --porcelain -- CMakeLists.txt native)" ] && [ -f "$out/build.json" ] &&
  node -e 'process.exit(require(process.argv[1]).sources === process.argv[2] ? 0 : 1)' "$root/$out/build.json" "$sources"; then
  echo "prebuild: $out is built from these sources already" >&2
  exit 0
fi

# One build of the checkout's sources copied to $1, with verbs ON or OFF ($2); prints the .node path.
build() {
  local dir="$1" verbs="$2"
  mkdir -p "$dir"
  git ls-files -z CMakeLists.txt native | xargs -0 cp --parents -t "$dir"
  ln -s "$root/node_modules" "$dir/node_modules"
  (cd "$dir" && npx cmake-js compile --out build --CDRVMA_WITH_VERBS="$verbs" \
    --CDCMAKE_CXX_FLAGS="-ffile-prefix-map=$dir=. -ffile-prefix-map=$root=." \
    --CDCMAKE_SHARED_LINKER_FLAGS="-s -Wl,--build-id=sha1" >"$dir.log" 2>&1) || { cat "$dir.log" >&2; exit 1; }
  echo "$dir/build/Release/rvma.node"
}

mkdir -p "$out"
for variant in verbs plain; do
  flag=$([ "$variant" = verbs ] && echo ON || echo OFF)
  first="$(build "$work/a-$variant" "$flag")"
  second="$(build "$work/b-$variant" "$flag")"
  if ! cmp -s "$first" "$second"; then
    echo "prebuild: two builds of the $variant addon differ; not reproducible here" >&2
    exit 1
  fi
  name=$([ "$variant" = verbs ] && echo rvma-verbs.node || echo rvma.node)
  cp "$first" "$out/$name"
  echo "prebuild: $out/$name $(sha256sum "$out/$name" | cut -c1-16) (two builds, identical)" >&2
done

node - "$out" "$sources" <<'JS'
const { execSync } = require('node:child_process');
const fs = require('node:fs');
const crypto = require('node:crypto');
const [out, sources] = process.argv.slice(2);
const sh = (cmd) => { try { return execSync(cmd, { encoding: 'utf8' }).split('\n')[0].trim(); } catch { return 'unknown'; } };
const sha = (f) => crypto.createHash('sha256').update(fs.readFileSync(`${out}/${f}`)).digest('hex');
const record = {
  commit: sh('git rev-parse HEAD'),
  // Tree hashes of native/ and CMakeLists.txt: a later run with the same ones keeps these files.
  sources,
  sourcesModified: sh('git status --porcelain -- CMakeLists.txt native') !== '',
  napiVersion: 8,
  compiler: sh('g++ --version'),
  glibc: sh('ldd --version'),
  rdmaCore: sh('pkg-config --modversion libibverbs'),
  nodeAddonApi: require('node-addon-api/package.json').version,
  cmakeJs: require('cmake-js/package.json').version,
  builtWith: process.version,
  // The newest glibc symbol version the addons use: the oldest glibc they load on.
  glibcNeeded: sh(`objdump -T ${out}/rvma-verbs.node ${out}/rvma.node | grep -o 'GLIBC_[0-9.]*' | sort -Vu | tail -1`),
  files: { 'rvma-verbs.node': sha('rvma-verbs.node'), 'rvma.node': sha('rvma.node') },
};
fs.writeFileSync(`${out}/build.json`, `${JSON.stringify(record, null, 2)}\n`);
JS
echo "prebuild: $out/build.json" >&2
