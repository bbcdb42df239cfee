// SPDX-License-Identifier: MIT
/* placeholder */
#include "suites.h"
Suite *pprof_suite(void)
{
	return suite_create("pprof");
}
