// SPDX-License-Identifier: MIT
/* placeholder */
#include "suites.h"
Suite *config_suite(void)
{
	return suite_create("config");
}
