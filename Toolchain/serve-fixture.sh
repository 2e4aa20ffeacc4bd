# Toolchain/serve-fixture.sh — sourced by Toolchain/bench-api and Toolchain/soak: `sokuho simulator`
# and `sokuho serve` on loopback with a store of synthetic phones, and start events submitted over
# the API. Not a command of its own.

pids=()
fixture_cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "${KEEP:-}" ] || rm -rf "$work"
}

# start_fixture BIN WORK PHONES [SIMULATOR OPTIONS…]: sets port, manage, admin, api, serve_pid.
start_fixture() {
  local bin=$1 phones=$3; work=$2; shift 3
  trap fixture_cleanup EXIT
  "$bin" simulator --cert-dir "$work/certs" --bundle com.example.eew "$@" > "$work/simulator.out" 2>"$work/simulator.err" &
  pids+=($!)
  for _ in $(seq 100); do [ -s "$work/simulator.out" ] && break; sleep 0.1; done
  read -r port manage < <(python3 -c 'import json,sys; d=json.loads(open(sys.argv[1]).readline()); print(d["port"], d["managePort"])' "$work/simulator.out")
  chmod 600 "$work/certs/"*.p8

  "$bin" tokens generate --count "$phones" --topics 1 --environment production > "$work/tokens.jsonl"
  "$bin" tokens import "$work/tokens.jsonl" --store "$work/store" >/dev/null
  openssl rand -hex 32 > "$work/admin.token"; chmod 600 "$work/admin.token"
  admin=$(cat "$work/admin.token")
  # No rate limit or start budget: one client submitting event after event on purpose.
  cat > "$work/sokuho.json" <<CONF
{"apps":[{"bundleID":"com.example.eew","teamID":"SOKUHOTEAM","keyID":"SIMKEY0001","keyFile":"$work/certs/AuthKey_SIMKEY0001.p8",
  "environment":"production","host":"127.0.0.1:$port","manageHost":"127.0.0.1:$manage","caFile":"$work/certs/ca.pem",
  "connections":4,"streams":1000}],
 "listen":["127.0.0.1:0"],"storePath":"$work/store","adminTokenFile":"$work/admin.token",
 "rateLimit":null,"startLimit":null,"statusPage":true}
CONF
  "$bin" serve --config "$work/sokuho.json" > "$work/serve.out" 2>"$work/serve.err" &
  serve_pid=$!
  pids+=($serve_pid)
  for _ in $(seq 200); do [ -s "$work/serve.out" ] && break; sleep 0.1; done
  api=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["listen"][0])' "$work/serve.out")
  for _ in $(seq 200); do curl -sf "http://$api/readyz" >/dev/null && break; sleep 0.1; done
}

# start_event KEY: submits a start to every phone and waits until it ends; prints its report (JSON).
start_event() {
  local key=$1 url state
  url=$(curl -sS -H "Authorization: Bearer $admin" -H 'Content-Type: application/json' --data-binary \
    "{\"app\":\"com.example.eew\",\"environment\":\"production\",\"key\":\"$key\",\"serial\":1,\"kind\":\"start\",\"deadlineSeconds\":120,\"attributesType\":\"EewLiveActivityAttributes\",\"attributes\":{\"eventId\":\"$key\"},\"alert\":{\"title\":\"緊急地震速報\",\"body\":\"強い揺れに警戒\"},\"groups\":[{\"topic\":\"region:0\",\"level\":5,\"channel\":null,\"contentState\":{\"serialNo\":1}}]}" \
    "http://$api/v1/events" | python3 -c 'import json,sys; print(json.load(sys.stdin)["url"])')
  while :; do
    state=$(curl -sS -H "Authorization: Bearer $admin" "http://$api$url")
    if printf '%s' "$state" | python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["state"] not in ("queued","running") else 1)'; then
      printf '%s\n' "$state" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["report"]))'
      return
    fi
    sleep 0.02
  done
}
