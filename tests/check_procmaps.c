// SPDX-License-Identifier: MIT
/* placeholder */
#include "suites.h"
Suite *procmaps_suite(void)
{
	return suite_create("procmaps");
}
