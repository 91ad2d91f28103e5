/*
 * target_hip.c - the HIP target (AMD GPUs), described so that -o x.hip and
 * --target hip name it; nothing is emitted until its runtime is written
 * (issue 13). Wavefronts are 64 lanes wide.
 */
#include "../core/emit.h"

const mkc_target mkc_target_hip = {
	.name = "hip",
	.ext = "hip",
	.unwritten = "the HIP target is not written yet (issue 13)",
	.warp = 64,
};
