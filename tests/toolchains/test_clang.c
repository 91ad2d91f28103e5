/*
 * test_clang.c - a second C compiler on the emitted C: every golden model
 * (each folder under tests/models with a test_data_set_0 and a model.onnx
 * or config.json) is emitted as C and checked by clang-19 with
 * -fsyntax-only -Wall -Wextra -Werror, beside the gcc build that
 * test_golden.c runs. clang and gcc warn about different things (implicit
 * conversions, unused functions in one translation unit, format checks),
 * and a user may build the file with either.
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include "../mkc_run.h"

static char out[1 << 16];

Test(clang, emitted_c_of_every_golden_model_passes_clang_19, .timeout = 300)
{
	cr_assert_eq(mkc_shell("command -v ${CLANG19:-clang-19}", out, sizeof out), 0,
		     "no clang-19 here: tools/setup.sh installs it (Debian: clang-19)");
	char cmd[2048];
	snprintf(cmd, sizeof cmd,
		 "d=$(mktemp -d) && n=0 && for t in $(find tests/models -name test_data_set_0 -type d "
		 "| sort); do m=${t%%/test_data_set_0}; "
		 "[ -f $m/model.onnx ] || [ -f $m/config.json ] || continue; "
		 "%s $m -o $d/m.c || { echo \"mkc failed on $m\"; rm -rf $d; exit 1; }; "
		 "${CLANG19:-clang-19} -std=c11 -fsyntax-only -Wall -Wextra -Werror $d/m.c "
		 "|| { echo \"clang-19 on the C of $m\"; rm -rf $d; exit 1; }; n=$((n+1)); done; "
		 "rm -rf $d; echo \"checked $n\"; [ $n -ge 20 ]",
		 mkc_bin());
	cr_assert_eq(mkc_shell(cmd, out, sizeof out), 0, "%s", out);
}
