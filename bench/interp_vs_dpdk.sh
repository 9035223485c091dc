#!/usr/bin/env bash
# Our interpreter (unchecked vm_interp_run, what runs with NCCLBPF_JIT=0) against DPDK
# 22.11's librte_bpf interpreter (rte_bpf_exec) on the same instruction bytes: noop,
# size-aware, compute and memory-sum programs (bench/interp_vs_dpdk.c). Both sides are
# compiled here from source with the same compiler and flags; DPDK's lib/bpf is built from
# a DPDK source tree without its EAL (bench/interp_vs_dpdk_rte.c stubs the few symbols).
#
# Reports (1) the time per call of each engine and their ratio, medians over many rounds
# that alternate the engines (read the ratio on a shared machine), and (2) with valgrind,
# instructions per call (callgrind, load-independent).
#
# usage: bench/interp_vs_dpdk.sh [--dpdk-src DIR] [--rounds N] [--calls N] [--no-callgrind]
#        bench/interp_vs_dpdk.sh --fetch-from GIT_CLONE [DIR]
#   --dpdk-src DIR  DPDK source tree (default: $DPDK_SRC, else build-dpdk/src)
#   --fetch-from G  copy the files needed from a DPDK git clone G (tag v22.11.11) into DIR
#                   (default build-dpdk/src, ignored by git: `run` can carry it to another
#                   machine), then exit
#   CC (default cc), CFLAGS (default -O2 -g) apply to both sides.
# Exit status: 0 measured; 77 skipped (no DPDK sources: the message says how to get them);
# 1 a build or a check failed.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dpdk_src=${DPDK_SRC:-$root/build-dpdk/src}
rounds=300
calls=20000
callgrind=1
tag=v22.11.11
CC=${CC:-cc}
CFLAGS=${CFLAGS:-"-O2 -g"}
subset=(lib/bpf lib/eal/include lib/eal/linux/include lib/eal/x86/include lib/mbuf
        lib/mempool lib/ring lib/net config/rte_config.h)

while [ $# -gt 0 ]; do
	case "$1" in
	--dpdk-src) dpdk_src=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--calls) calls=$2; shift 2 ;;
	--no-callgrind) callgrind=0; shift ;;
	--fetch-from)
		git_dir=$2
		out=${3:-$root/build-dpdk/src}
		mkdir -p "$out"
		git -C "$git_dir" archive "$tag" "${subset[@]}" | tar -x -C "$out"
		echo "DPDK $tag sources for lib/bpf in $out"
		exit 0 ;;
	-h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "interp_vs_dpdk.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
	esac
done

if [ ! -f "$dpdk_src/lib/bpf/bpf_exec.c" ] || [ ! -f "$dpdk_src/config/rte_config.h" ]; then
	cat >&2 <<EOF
interp_vs_dpdk.sh: SKIPPED: no DPDK source tree at $dpdk_src (lib/bpf/bpf_exec.c).
  Get one with: bench/interp_vs_dpdk.sh --fetch-from /path/to/dpdk-git-clone
  (the files of tag $tag it needs, ~2 MB, into build-dpdk/src), or pass --dpdk-src DIR.
EOF
	exit 77
fi
if [ "$(uname -m)" != x86_64 ]; then
	echo "interp_vs_dpdk.sh: SKIPPED: the DPDK build here is configured for x86_64" >&2
	exit 77
fi

work=$(mktemp -d /tmp/interp_vs_dpdk.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/shim"
# What DPDK's meson configure would generate for a generic x86-64 Linux build.
cat > "$work/shim/rte_build_config.h" <<'EOF'
#define RTE_ARCH_X86_64 1
#define RTE_ARCH_X86 1
#define RTE_ARCH_64 1
#define RTE_ARCH "x86_64"
#define RTE_CACHE_LINE_SIZE 64
#define RTE_MAX_LCORE 128
#define RTE_MAX_NUMA_NODES 8
#define RTE_MAX_HEAPS 32
#define RTE_MAX_MEMSEG_LISTS 128
#define RTE_EXEC_ENV_LINUX 1
#define RTE_EXEC_ENV_IS_LINUX 1
#define RTE_TOOLCHAIN_GCC 1
#define RTE_VER_YEAR 22
#define RTE_VER_MONTH 11
#define RTE_VER_MINOR 11
#define RTE_VER_SUFFIX ""
#define RTE_VER_RELEASE 99
#define RTE_MBUF_DEFAULT_MEMPOOL_OPS "ring_mp_mc"
#define RTE_IOVA_AS_PA 1
#define RTE_LIBRTE_BPF 1
EOF
dinc=(-include rte_config.h -I"$work/shim" -I"$dpdk_src/config" -I"$dpdk_src/lib/eal/include"
      -I"$dpdk_src/lib/eal/linux/include" -I"$dpdk_src/lib/eal/x86/include"
      -I"$dpdk_src/lib/mbuf" -I"$dpdk_src/lib/mempool" -I"$dpdk_src/lib/ring"
      -I"$dpdk_src/lib/net" -I"$dpdk_src/lib/bpf")
echo "== building DPDK lib/bpf ($dpdk_src) and the benchmark: $CC $CFLAGS"
objs=()
for f in bpf bpf_exec bpf_load bpf_validate bpf_jit_x86; do
	$CC $CFLAGS -std=gnu11 -D_GNU_SOURCE -DALLOW_INTERNAL_API -DALLOW_EXPERIMENTAL_API -w \
		"${dinc[@]}" -c "$dpdk_src/lib/bpf/$f.c" -o "$work/dpdk_$f.o"
	objs+=("$work/dpdk_$f.o")
done
$CC $CFLAGS -std=gnu11 -D_GNU_SOURCE -DALLOW_EXPERIMENTAL_API -DBENCH_DPDK_STUBS -w "${dinc[@]}" \
	-c "$root/bench/interp_vs_dpdk_rte.c" -o "$work/rte_side.o"
$CC $CFLAGS -std=gnu11 -Wall -Wextra -Werror -I"$root/include" -I"$root/src" -I"$root/tests" -I"$root/bench" \
	"$root/bench/interp_vs_dpdk.c" "$root/src/vm/vm_interp.c" "$root/src/vm/vm_interp_checked.c" \
	"$root/src/isa/isa_validate.c" "$root"/src/maps/*.c "$work/rte_side.o" "${objs[@]}" \
	-lpthread -o "$work/interp_vs_dpdk"
bin=$work/interp_vs_dpdk

echo "== machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs; $($CC --version | head -1); $(date -u +%Y-%m-%d)"
"$bin" check
"$bin" time "$rounds" "$calls"

if [ "$callgrind" = 1 ] && command -v valgrind > /dev/null; then
	n=20000
	echo "== instructions per call (valgrind --tool=callgrind, inclusive count of"
	echo "   vm_interp_run / rte_bpf_exec over $n calls)"
	printf "%-11s %12s %12s %10s\n" program ours DPDK ours/DPDK
	for p in noop size-aware compute memory-sum; do
		ir=()
		for e in ours dpdk; do
			fn=vm_interp_run
			[ $e = dpdk ] && fn=rte_bpf_exec
			valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" \
				--toggle-collect=$fn "$bin" one $e $p $n > /dev/null 2>&1
			tot=$(awk '/^(summary|totals):/ {print $2; exit}' "$work/cg.out")
			ir+=("$tot")
		done
		awk -v p="$p" -v a="${ir[0]}" -v b="${ir[1]}" -v n=$n \
			'BEGIN { printf "%-11s %12.1f %12.1f %9.3fx\n", p, a / n, b / n, a / b }'
	done
elif [ "$callgrind" = 1 ]; then
	echo "(valgrind not installed: no instruction counts)"
fi
