/* noembed: includes anvil.h whole and calls neither anvil_embed nor
 * anvil_judge, for sdk_test.go's import check. */
#define ANVIL_IMPLEMENTATION
#include "anvil.h"

ANVIL_EXPORT("anvil_describe") int32_t describe(void) {
	static const char d[] = "{\"name\":\"noembed\",\"version\":\"0.0.1\",\"abi_major\":1,\"abi_minor\":0,"
	                        "\"kinds\":[{\"name\":\"noop\",\"role\":\"metric\"}]}";
	return anvil_output(d, sizeof d - 1) < 0 ? anvil_fail("cannot allocate the descriptor") : 0;
}

ANVIL_EXPORT("anvil_measure") int32_t measure(void) {
	anvil_log("info", "noop");
	return anvil_measure_error(0, "metric_error", NULL, "noop");
}
