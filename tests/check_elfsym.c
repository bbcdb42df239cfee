// SPDX-License-Identifier: MIT
/* placeholder */
#include "suites.h"
Suite *elfsym_suite(void)
{
	return suite_create("elfsym");
}
