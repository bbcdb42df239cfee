// SPDX-License-Identifier: MIT
/* placeholder */
#include "suites.h"
Suite *timeparse_suite(void)
{
	return suite_create("timeparse");
}
