/*
 * test_names.c - reserved_names.h (backends/core/gen_reserved.py) against
 * the headers of the CUDA and HIP outputs on this machine, with nvcc and
 * hipcc (tests/reserved_check.h): every name mkc takes as --name compiles
 * as the prefix after them, every name listed for the target does not.
 * tests/compiler/test_names.c checks the C target's.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "../reserved_check.h"

Test(names, reserved_list_is_complete_and_true_for_cuda, .timeout = 600)
{
	const rc_tools nvcc = {"cuda", "cu", 2, "nvcc -x cu -E -Xcompiler -P %s",
			       "nvcc -x cu -E -Xcompiler -dM %s",
			       "nvcc -x cu -c -o /dev/null -Xcudafe --error_limit=1000000 %s"};
	rc_check_in_scratch(&nvcc);
}

Test(names, reserved_list_is_complete_and_true_for_hip, .timeout = 600)
{
	const rc_tools hipcc = {"hip", "hip", 4, "hipcc -x hip --offload-arch=gfx90a -E -P %s",
				"hipcc -x hip --offload-arch=gfx90a -E -dM %s",
				/* host and device apart: clang skips the device after host errors */
				"for s in host device; do hipcc -x hip --offload-arch=gfx90a "
				"--offload-$s-only -fsyntax-only -ferror-limit=0 %s || r=1; done; "
				"exit $r"};
	rc_check_in_scratch(&hipcc);
}
