#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine:
#   bash scripts/suanli.sh run    install what is missing, build (Release), run the default scenario
#   bash scripts/suanli.sh test   install what is missing, build with ASan+UBSan (clang), run every test
#   bash scripts/suanli.sh deps   only install the Debian packages
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(cmake ninja-build g++ clang libclang-rt-14-dev pkg-config
          libgtest-dev libgmock-dev libbenchmark-dev
          libcli11-dev libfmt-dev nlohmann-json3-dev libtomlplusplus-dev
          libsqlite3-dev libpugixml-dev libopenblas-dev libyaml-cpp-dev)

deps() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "suanli: installing ${missing[*]}" >&2
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

jobs() { nproc 2>/dev/null || echo 2; }

build_release() {
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSUANLI_BUILD_TESTS=OFF >/dev/null
  cmake --build build -j "$(jobs)"
}

build_test() {
  CC=clang CXX=clang++ cmake -S . -B build-test -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSUANLI_SANITIZE=ON -DSUANLI_BUILD_TESTS=ON -DSUANLI_BUILD_FUZZ=ON -DSUANLI_BUILD_BENCH=ON >/dev/null
  cmake --build build-test -j "$(jobs)"
}

case "${1:-run}" in
  deps) deps ;;
  run)
    deps
    build_release
    # The default scenario: will Llama 3.1 8B serve 8 x 8k-token requests on one H100, and on what else?
    ./build/suanli fit --model llama-3.1-8b --gpu h100-sxm --batch 8 --seq 8192
    echo
    ./build/suanli fit --model llama-3.1-70b --mode infer --batch 8 --seq 8192
    ;;
  test)
    deps
    build_test
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    ctest --test-dir build-test --output-on-failure -j "$(jobs)"
    ;;
  *) echo "usage: $0 run|test|deps" >&2; exit 2 ;;
esac
