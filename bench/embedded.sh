# Sourced by the bench scripts that drive the unitrun CLI: builds
# bin/unitrun from this tree, boots a fresh embedded manager in a tmpfs
# directory ($work/m; root), points systemctl --user and unitrun at it, and
# stops it and removes $work when the script exits. ms A B prints the
# milliseconds from one now to a later one.
mkdir -p bin
go build -o bin/unitrun ./cmd/unitrun
work=$(mktemp -d -p /dev/shm unitrun-bench-XXXXXX)
trap 'bin/unitrun --embedded-dir "$work/m" manager stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
bin/unitrun --embedded-dir "$work/m" manager start >/dev/null
eval "$(bin/unitrun --embedded-dir "$work/m" manager env)"
export UNITRUN_MANAGER="private:$work/m/systemd/private"
now() { echo "${EPOCHREALTIME/./}"; }
ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b - a) / 1e3 }'; }
# podyaml NAME N writes the manifest of pod NAME of N apps, each a
# "sleep 600", to $work/NAME.yaml.
podyaml() {
  {
    echo "name: $1"
    echo "apps:"
    for i in $(seq 0 $(($2 - 1))); do printf '  - name: a%d\n    exec: [/bin/sleep, "600"]\n' "$i"; done
  } >"$work/$1.yaml"
}
