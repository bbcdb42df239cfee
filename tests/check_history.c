// SPDX-License-Identifier: MIT
/* placeholder */
#include "suites.h"
Suite *history_suite(void)
{
	return suite_create("history");
}
