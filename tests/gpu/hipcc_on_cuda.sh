#!/bin/sh
# hipcc_on_cuda.sh - TEST ONLY: a stand-in for hipcc that builds mkc's .hip
# output for an NVIDIA GPU through tests/gpu/hip_on_cuda.h, so that
#
#   HIPCC=$PWD/tests/gpu/hipcc_on_cuda.sh build/mkc test --target hip DIR...
#
# runs the HIP output's golden tests on the H200 (tools/gpu_check.sh does).
# It takes the arguments mkc test's build command gives hipcc
# (backends/hip/target_hip.c): --offload-arch=A (dropped: the device is the
# NVIDIA one), -O2, -Wall, -Wextra, -Werror (warnings as errors in host and
# device code), -c, -o OUT and the input files, and runs nvcc on them as
# CUDA with a folder first on the include path whose hip/hip_runtime.h is
# the mapping header. What that runs and what it does not: see the header.
# NVCC names another nvcc; MKC_CUDA_GENCODE another target (default sm_90a).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
inc=$(mktemp -d)
trap 'rm -rf "$inc"' EXIT
mkdir "$inc/hip"
echo "#include \"$here/hip_on_cuda.h\"" >"$inc/hip/hip_runtime.h"
set -- "$@" --end--
werror=
while [ "$1" != --end-- ]; do
	case $1 in
	--offload-arch=*) ;;
	-Werror) werror="-Werror all-warnings" ;;
	-Wall | -Wextra) set -- "$@" "-Xcompiler" "$1" ;;
	*) set -- "$@" "$1" ;;
	esac
	shift
done
shift
# shellcheck disable=SC2086
"${NVCC:-nvcc}" ${MKC_CUDA_GENCODE:--gencode=arch=compute_90a,code=sm_90a} -I"$inc" -x cu \
	$werror "$@"
