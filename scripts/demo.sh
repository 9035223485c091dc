#!/usr/bin/env bash
# ncclbpf demo: load a shipped policy, show what the runtime sees (programs, hooks, maps),
# disassemble it with its source lines, verify it if this build has `ncclbpf verify`, and
# run eBPF code through the runtime (`ncclbpf exec`, the conformance protocol).
# Run after building: cmake -S . -B build && cmake --build build -j2 && ./scripts/demo.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
B=${BUILD_DIR:-build}
cli=$B/ncclbpf
policy=$B/policies/size_aware.bpf.o
[ -x "$cli" ] || { echo "demo: $cli not built (see README.md)" >&2; exit 1; }
[ -f "$policy" ] || { echo "demo: $policy not built (see README.md)" >&2; exit 1; }

echo "== ncclbpf info $policy"
"$cli" info "$policy"
echo
echo "== ncclbpf disasm $policy"
"$cli" disasm "$policy"
echo
vout=$("$cli" verify "$policy" 2>&1) || true
if ! grep -q 'not part of this build' <<<"$vout"; then
	echo "== ncclbpf verify $policy"
	echo "$vout"
	echo
fi
echo "== ncclbpf exec: a clang-compiled program (r0 = *(u32 *)mem + len)"
echo "   memory 05 00 00 00 (4 bytes): expect 9"
od -An -tx1 -v "$B/tests/progs/runtime_conf.bpf.o" | "$cli" exec '05 00 00 00' --elf
echo "== ncclbpf exec: raw instructions (r0 = 6 * 7), interpreter then JIT"
prog="b7 00 00 00 06 00 00 00 27 00 00 00 07 00 00 00 95 00 00 00 00 00 00 00"
echo "$prog" | "$cli" exec --interpret
echo "$prog" | "$cli" exec --jit || echo "(no JIT on this machine)"

# ---- NCCL's view, without a GPU: the mock NCCL host (tests/mock_nccl) loads
# libnccl-tuner-ncclbpf.so exactly as NCCL 2.27-2.32 do (dlopen RTLD_NOW|RTLD_LOCAL,
# NCCL_TUNER_PLUGIN=ncclbpf name resolution, versioned symbols). ----
host=$B/mock_nccl_host
if [ -x "$host" ]; then
	absB=$(cd "$B" && pwd)
	export LD_LIBRARY_PATH="$absB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	if ! grep -q 'not part of this build' <<<"$vout"; then
		echo "== verify every shipped policy, then the unsafe ones (each must be rejected)"
		for p in "$B"/policies/*.bpf.o; do
			printf '%-28s ' "$(basename "$p")"
			if out=$("$cli" verify "$p" 2>&1); then
				echo accepted
			elif grep -q 'E-RANK-LOCAL' <<<"$out"; then
				# closed-loop demonstrations: they decide from rank-local latency, so
				# ranks could disagree; accepted only with NCCLBPF_RANK_LOCAL=allow
				echo "rejected by default: $(grep -m1 -o 'ctx->[a-z_]* depends on rank-local data[^:]*' <<<"$out")"
				printf '%-28s ' "  with NCCLBPF_RANK_LOCAL=allow"
				NCCLBPF_RANK_LOCAL=allow "$cli" verify "$p" >/dev/null 2>&1 && echo accepted || echo REJECTED
			else
				echo "REJECTED (unexpected)"; echo "$out" | sed 's/^/   /'
			fi
		done
		for p in "$B"/policies/unsafe/*.bpf.o; do
			[ -f "$p" ] || continue
			echo "-- $(basename "$p"):"
			"$cli" verify "$p" 2>&1 | sed 's/^/   /' || true
		done
		echo
	fi
	echo "== the tuner as each NCCL release binds it"
	"$host" versions --plugin ncclbpf
	echo
	for pol in nvlink_ring_mid size_aware; do
		echo "== one training step on an 8-GPU NVLink node, NCCLBPF_POLICY=$pol.bpf.o"
		NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING NCCLBPF_POLICY="$absB/policies/$pol.bpf.o" \
			"$host" simulate --nccl 2.30 --plugin ncclbpf 2>&1
		echo
	done
	echo "== a policy the verifier rejects: one WARN line, pass-through, the job runs"
	NCCL_DEBUG=WARN NCCLBPF_POLICY="$absB/tests/tuner/progs/reject_ctx_write.bpf.o" \
		"$host" simulate --nccl 2.28 --plugin ncclbpf | tail -n 3
	echo
	echo "== 8 threads x 4 communicators calling getCollInfo concurrently, invariants checked"
	NCCLBPF_POLICY="$absB/policies/size_aware.bpf.o,$absB/policies/bad_channels.bpf.o" \
		"$host" stress --nccl 2.30 --plugin ncclbpf --threads 8 --comms 4 --iters 20000
fi
