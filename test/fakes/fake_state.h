/*
 * State shared by the fake vendor libraries (fake_nvml.c, fake_amdsmi.c).
 *
 * The state is a text file named by an environment variable: one `key=value` per line, the
 * last line for a key wins. Per-device keys are written `<index>.<key>`. The fakes re-read the
 * file on every call, so a test can change a value between two reads, and every set appends
 * its result as a new line, so a test can read back what reached the "hardware". Mutating
 * calls are also appended to a call log (second environment variable), so a test can assert
 * that a rejected request never reached the library.
 */
#ifndef FAKE_STATE_H
#define FAKE_STATE_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FAKE_VALUE_MAX 256

/* Last value of `key` in the state file, copied into `out`; 0 when absent. */
static int fake_lookup(const char *env, const char *key, char *out) {
  const char *path = getenv(env);
  if (path == NULL) return 0;
  FILE *f = fopen(path, "r");
  if (f == NULL) return 0;
  char line[512];
  size_t klen = strlen(key);
  int found = 0;
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, key, klen) != 0 || line[klen] != '=') continue;
    const char *v = line + klen + 1;
    size_t n = strcspn(v, "\r\n");
    if (n >= FAKE_VALUE_MAX) n = FAKE_VALUE_MAX - 1;
    memcpy(out, v, n);
    out[n] = '\0';
    found = 1;
  }
  fclose(f);
  return found;
}

static void fake_device_key(char *key, size_t size, int dev, const char *name) {
  if (dev < 0) snprintf(key, size, "%s", name);
  else snprintf(key, size, "%d.%s", dev, name);
}

/* Numeric value of a (per-device when dev >= 0) key, or `def` when absent. */
static double fake_num(const char *env, int dev, const char *name, double def) {
  char key[128], value[FAKE_VALUE_MAX];
  fake_device_key(key, sizeof key, dev, name);
  if (!fake_lookup(env, key, value)) return def;
  return strtod(value, NULL);
}

/* String value of a per-device key, or `def` when absent. */
static void fake_str(const char *env, int dev, const char *name, const char *def, char *out) {
  char key[128];
  fake_device_key(key, sizeof key, dev, name);
  if (!fake_lookup(env, key, out)) snprintf(out, FAKE_VALUE_MAX, "%s", def);
}

/* True when `fn` appears in the comma-separated list stored at the per-device key. */
static int fake_listed(const char *env, int dev, const char *name, const char *fn) {
  char list[FAKE_VALUE_MAX];
  fake_str(env, dev, name, "", list);
  size_t fl = strlen(fn);
  for (char *p = list; *p != '\0';) {
    size_t n = strcspn(p, ",");
    if (n == fl && strncmp(p, fn, n) == 0) return 1;
    p += n;
    if (*p == ',') p++;
  }
  return 0;
}

/* Appends `<dev>.<name>=<value>` to the state file: the new value wins from now on. */
static void fake_set(const char *env, int dev, const char *name, double value) {
  const char *path = getenv(env);
  if (path == NULL) return;
  FILE *f = fopen(path, "a");
  if (f == NULL) return;
  char key[128];
  fake_device_key(key, sizeof key, dev, name);
  fprintf(f, "%s=%.17g\n", key, value);
  fclose(f);
}

/* Appends one line to the call log. */
static void fake_log(const char *env, const char *fmt, ...) {
  const char *path = getenv(env);
  if (path == NULL) return;
  FILE *f = fopen(path, "a");
  if (f == NULL) return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(f, fmt, ap);
  va_end(ap);
  fputc('\n', f);
  fclose(f);
}

/* Seconds on the monotonic clock: energy counters advance with it at the configured power. */
static double fake_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Parses a CPU list such as "0-3,8" into a bit mask of 64-bit words. */
__attribute__((unused)) static void fake_cpu_mask(const char *list, unsigned long *words, unsigned int nwords) {
  memset(words, 0, nwords * sizeof *words);
  const char *p = list;
  while (*p != '\0') {
    char *end;
    long lo = strtol(p, &end, 10);
    long hi = lo;
    if (end == p) break;
    if (*end == '-') hi = strtol(end + 1, &end, 10);
    for (long c = lo; c <= hi; c++) {
      if (c >= 0 && (unsigned long)c / 64 < nwords) words[c / 64] |= 1UL << (c % 64);
    }
    p = *end == ',' ? end + 1 : end;
  }
}

#endif
