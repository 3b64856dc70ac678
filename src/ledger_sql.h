/* ledger_sql.h: PLACEHOLDER until the ledgercli branch lands. */
#ifndef PGLEADER_LEDGER_SQL_H
#define PGLEADER_LEDGER_SQL_H
char *ledger_sql_check(const char *schema);
char *ledger_sql_init(const char *schema);
#endif
