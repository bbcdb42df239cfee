// SPDX-License-Identifier: MIT
/* placeholder */
#include "suites.h"
Suite *ksyms_suite(void)
{
	return suite_create("ksyms");
}
