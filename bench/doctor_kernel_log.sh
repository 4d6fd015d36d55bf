#!/usr/bin/env bash
# Kernel-log parser speed: generates a large synthetic kernel log (ordinary kernel noise with an
# NVRM line every ~200 lines and an Xid burst every ~50,000 lines), then times
#   grep -c NVRM FILE                                 (the floor: one pass, no parsing)
#   suanli doctor --kernel-log FILE --json >/dev/null (read + parse + rules + JSON)
# Usage: bench/doctor_kernel_log.sh [SIZE_MB (default 1024)] [SUANLI binary (default build/suanli)]
# The file is written to ${TMPDIR:-/tmp} and removed at the end.
set -euo pipefail
size_mb=${1:-1024}
suanli=${2:-build/suanli}
file="${TMPDIR:-/tmp}/suanli_bench_kernel_$$.log"
trap 'rm -f "$file" "$file.block"' EXIT

# One block of 50,000 lines (~5 MB); the file is that block repeated.
python3 - "$file.block" <<'PY'
import sys, random
random.seed(1)
noise = [
  "kernel: audit: type=1400 audit({t}): apparmor=\"STATUS\" operation=\"profile_replace\" profile=\"unconfined\" name=\"docker-default\" pid={p}",
  "kernel: IPv6: ADDRCONF(NETDEV_CHANGE): veth{p:x}: link becomes ready",
  "kernel: docker0: port 3(veth{p:x}) entered forwarding state",
  "kernel: EXT4-fs (nvme0n1p2): re-mounted. Opts: errors=remount-ro. Quota mode: none.",
  "kernel: mlx5_core 0000:0c:00.0: mlx5_cmd_out_err:803: QUERY_VPORT_COUNTER(0x770) op_mod(0x0) failed, status bad parameter(0x3)",
]
nvrm = "kernel: NVRM: GPU at PCI:0000:{b:02x}:00: GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e{b:02x}"
burst = [
  "kernel: NVRM: Xid (PCI:0000:3b:00): 48, pid=91822, name=python3, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.",
  "kernel: NVRM: Xid (PCI:0000:3b:00): 63, pid=91822, Row Remapper: New row marked for remapping, reset gpu to activate.",
  "kernel: NVRM: Xid (PCI:0000:3b:00): 45, pid=91822, name=python3, Ch 00000008",
]
out = []
t = 1000.0
for i in range(50000):
    t += 0.013
    if i == 25000:
        for b in burst: out.append(f"[{t:12.6f}] {b}")
        continue
    if i % 200 == 0:
        out.append(f"[{t:12.6f}] " + nvrm.format(b=random.randrange(256)))
    else:
        out.append(f"[{t:12.6f}] " + random.choice(noise).format(t=t, p=random.randrange(1 << 20)))
open(sys.argv[1], "w").write("\n".join(out) + "\n")
PY
block_bytes=$(stat -c %s "$file.block")
reps=$(( (size_mb * 1024 * 1024 + block_bytes - 1) / block_bytes ))
: > "$file"
for _ in $(seq "$reps"); do cat "$file.block" >> "$file"; done
bytes=$(stat -c %s "$file")
echo "file: $file  $(( bytes / 1048576 )) MiB  $(wc -l < "$file") lines"
cat "$file" > /dev/null  # warm the page cache for both tools

# Elapsed and CPU (user+sys) time: on a shared machine the CPU time is the steadier number.
timeit() { /usr/bin/time -f "%e s elapsed, %U s user + %S s sys, peak RSS %M KiB" "$@"; }
echo "grep -c NVRM:"
timeit grep -c NVRM "$file"
echo "suanli doctor --kernel-log FILE --json:"
timeit "$suanli" doctor --kernel-log "$file" --json > "$file.json" || true
python3 -c "import json;j=json.load(open('$file.json'));print(' ', len(j['findings']),'findings, overall',j['overall'])"
rm -f "$file.json"
