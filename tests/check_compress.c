// SPDX-License-Identifier: MIT
/* placeholder */
#include "suites.h"
Suite *compress_suite(void)
{
	return suite_create("compress");
}
