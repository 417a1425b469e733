/* The floor of any process: exec, the C library, exit. bench/perf/run times `dbcheck --help` beside
 * it (the cost of dbcheck's start alone, before any check). */
int main(void) {
  return 0;
}
