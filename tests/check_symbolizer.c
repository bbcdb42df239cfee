// SPDX-License-Identifier: MIT
/* placeholder */
#include "suites.h"
Suite *symbolizer_suite(void)
{
	return suite_create("symbolizer");
}
