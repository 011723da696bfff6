#!/usr/bin/env bash
# Helpers shared by scripts/test and scripts/demo. Source it; it sets no shell options itself.
# shellcheck shell=bash

# The Debian packages rlock needs to build, test and format (and for CI's benchmark smoke run:
# gnuplot-nox, python3-redis), installed in one apt-get call. libclang-rt-14-dev: clang's
# sanitizer runtimes, for the asan-ubsan preset (only a recommendation of clang's).
# shellcheck disable=SC2034  # used by the scripts that source this file
RLOCK_PACKAGES=(cmake ninja-build g++ clang libclang-rt-14-dev libboost1.81-dev libfmt-dev libgtest-dev libgmock-dev
  redis-server redis-tools clang-format pkg-config libcli11-dev libspdlog-dev libhiredis-dev
  libssl-dev openssl doxygen ccache mold git gnuplot-nox python3-redis)

# cmake --build's arguments for RLOCK_JOBS=N, a limit on build parallelism (none when unset).
# shellcheck disable=SC2034
RLOCK_BUILD_ARGS=()
if [[ -n ${RLOCK_JOBS:-} ]]; then
  RLOCK_BUILD_ARGS=(--parallel "$RLOCK_JOBS")
fi

log() {
  printf '==> %s\n' "$*" >&2
}

# ensure_packages PKG...: installs the missing ones when root, else says how and fails.
ensure_packages() {
  local missing=() pkg
  for pkg in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$pkg")
    fi
  done
  if ((${#missing[@]} == 0)); then
    return 0
  fi
  if [[ $(id -u) -eq 0 ]]; then
    log "installing ${missing[*]}"
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
  else
    printf 'missing packages; run:\nsudo apt-get install -y %s\n' "${missing[*]}" >&2
    exit 1
  fi
}

# What scripts/docs needs: the site generator and its theme, the reference generator, Graphviz
# for the pictures.
# shellcheck disable=SC2034
RLOCK_DOCS_PACKAGES=(mkdocs mkdocs-material python3-pymdownx python3-pygments doxygen graphviz)

# What the browser test of the site (test/docs) needs beyond that: Debian's Chromium, its driver
# and Selenium.
# shellcheck disable=SC2034
RLOCK_BROWSER_PACKAGES=(chromium chromium-driver python3-selenium)

# What scripts/package needs beyond that: lintian, dpkg-shlibdeps (dpkg-dev), and help2man for
# rlockctl's manual page.
# shellcheck disable=SC2034
RLOCK_PACKAGE_PACKAGES=(dpkg-dev lintian help2man man-db)

# free_port: prints a loopback TCP port that was free a moment ago.
free_port() {
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
    return
  fi
  # No python3: probe random high ports until one refuses a connection.
  local port tries
  for ((tries = 0; tries < 100; tries++)); do
    port=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      printf '%s\n' "$port"
      return 0
    fi
  done
  echo "free_port: no free port found" >&2
  return 1
}

# start_redis PORT [ARGS...]: starts a private redis-server on 127.0.0.1:PORT (with ARGS, e.g.
# --tls-port ...) and waits (at most 10 s) until it answers PING. Sets RLOCK_REDIS_PORT and
# RLOCK_REDIS_DIR for stop_redis; callers should `trap stop_redis EXIT` right after calling it.
start_redis() {
  local port=$1 i
  shift
  RLOCK_REDIS_PORT=$port
  RLOCK_REDIS_DIR=$(mktemp -d "${TMPDIR:-/tmp}/rlock-redis.XXXXXX")
  log "starting redis-server on 127.0.0.1:$port (dir $RLOCK_REDIS_DIR)"
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
    --pidfile "$RLOCK_REDIS_DIR/redis.pid" --logfile "$RLOCK_REDIS_DIR/redis.log" \
    --dir "$RLOCK_REDIS_DIR" "$@"
  for ((i = 0; i < 100; i++)); do
    if [[ $(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null) == PONG ]]; then
      return 0
    fi
    sleep 0.1
  done
  echo "start_redis: redis-server on port $port did not answer PING within 10 s; log:" >&2
  tail -n 20 "$RLOCK_REDIS_DIR/redis.log" >&2 || true
  stop_redis
  return 1
}

# stop_redis: stops the server start_redis started (SHUTDOWN NOSAVE, then SIGTERM/SIGKILL by
# its pid) and removes its directory. Safe to call twice or without a server.
stop_redis() {
  [[ -n ${RLOCK_REDIS_DIR:-} ]] || return 0
  local pidfile=$RLOCK_REDIS_DIR/redis.pid pid='' i
  if [[ -s $pidfile ]]; then
    pid=$(<"$pidfile")
  fi
  redis-cli -h 127.0.0.1 -p "$RLOCK_REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
  if [[ -n $pid ]]; then
    for ((i = 0; i < 50; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      if ((i == 20)); then
        kill -TERM "$pid" 2>/dev/null || true
      fi
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -rf "$RLOCK_REDIS_DIR"
  RLOCK_REDIS_DIR=''
}
