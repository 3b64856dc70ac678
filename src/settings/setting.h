/* setting.h: one setting's value, parsed by its row's type into its field. */
#ifndef PGLEADER_SETTING_H
#define PGLEADER_SETTING_H

#include "options.h"

#include <stddef.h>

/* Parses value as row says into field (for OPTION_TEXT, a char * the
 * caller keeps). Returns 0, or -1 with why: what is wrong with the value,
 * not where it came from, which the caller knows. */
int setting_parse(const struct option_row *row, void *field, const char *value,
		  char *why, size_t whylen);
/* Sets field back to nothing: 0, false or NULL (the string freed). */
void setting_clear(const struct option_row *row, void *field);

#endif
